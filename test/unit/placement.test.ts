import { placementRefusal, type PlacementFacts } from '../../domain/placement';

const P1 = '11111111-1111-4111-8111-111111111111';
const P2 = '22222222-2222-4222-8222-222222222222';
const active = { state: 'active' };

/** Every case of the placement rule: the resource's assigned projects x the workload's project (none, one of them, another) x what the caller sees of it. */
const cases: Array<[string, PlacementFacts, string | null]> = [
  [
    'no compute resource of the workspace by that id',
    { resourceProjects: null, projectId: null, project: null },
    'no_resource',
  ],
  [
    'no compute resource, even with a good project (the resource is checked first)',
    { resourceProjects: null, projectId: P1, project: active },
    'no_resource',
  ],
  [
    'PRJ-02 BKT-07 unassigned resource, no project: the shared pool, nothing inferred',
    { resourceProjects: [], projectId: null, project: null },
    null,
  ],
  [
    'PRJ-02 unassigned resource takes a workload of any project',
    { resourceProjects: [], projectId: P1, project: active },
    null,
  ],
  ['project not of the workspace', { resourceProjects: [], projectId: P1, project: null }, 'no_project'],
  [
    'PRJ-04 project closed to the caller reads as absent',
    { resourceProjects: [P1], projectId: P1, project: null },
    'no_project',
  ],
  [
    'project being deleted',
    { resourceProjects: [], projectId: P1, project: { state: 'deleting' } },
    'project_deleting',
  ],
  [
    'CLN-04 PRV-09 assigned resource, the project is one of them',
    { resourceProjects: [P2, P1], projectId: P1, project: active },
    null,
  ],
  [
    'CLN-04 PRV-09 assigned resource, another project',
    { resourceProjects: [P1], projectId: P2, project: active },
    'assigned_to_other_projects',
  ],
  [
    'CLN-04 PRV-09 assigned resource, no project: refused (none is not one of them; never inferred)',
    { resourceProjects: [P1], projectId: null, project: null },
    'assigned_needs_project',
  ],
];

describe('placement (domain/placement.ts)', () => {
  it.each(cases)('%s', (_name, facts, reason) => {
    expect(placementRefusal(facts)?.reason ?? null).toBe(reason);
  });

  it("names the field at fault and the resource's projects, sorted", () => {
    expect(placementRefusal({ resourceProjects: null, projectId: null, project: null })).toMatchObject({
      field: 'resource_id',
    });
    const refusal = placementRefusal({ resourceProjects: [P2, P1], projectId: null, project: null });
    expect(refusal).toMatchObject({ field: 'project_id', projects: [P1, P2] });
    expect(refusal?.message).toContain(`${P1}, ${P2}`);
    expect(placementRefusal({ resourceProjects: [P1], projectId: P2, project: active })?.message).toMatch(
      /assigned to other projects/,
    );
  });
});
