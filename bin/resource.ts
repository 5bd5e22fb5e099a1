import { parseArgs } from 'node:util';
import type { DataSource } from 'typeorm';
import { rows } from '../entities/sql';
import type { Config } from '../platform/config';
import { DEFAULT_PLAN, DRIVER_LABEL_PREFIX, insertComputeResource } from './bootstrap';
import { findWorkspace, withDatabase } from './token';

const GIB = 2 ** 30;

/** Bad command-line input (exit code 2), as opposed to a refusal of the request (exit code 1). */
export class UsageError extends Error {}

/** The plans `berth resource create --plan` offers; --cpu/--ram/--disk resize them. */
export const PLANS = {
  standard: DEFAULT_PLAN,
  free: {
    name: 'Free',
    code_name: 'free',
    description: 'Free: apps sleep after 30 minutes without traffic; no backups',
    plan_type: 'free',
    cpu_size: 0.5,
    ram_size: 512 * 2 ** 20,
    disk_size: 5 * GIB,
    unit_price: 0,
  },
} as const;
type PlanName = keyof typeof PLANS;

const USAGE = `usage: berth resource create --name <name> --region <code> --plan free|standard [--cpu <cores>] [--ram <GiB>] [--disk <GiB>] [--workspace <uuid|name>]
       berth resource list [--workspace <uuid|name>]`;

function positive(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new UsageError(`--${flag} must be a positive number, got "${value}"`);
  return n;
}

/** The workspace named, or the only one there is. */
async function workspaceOf(ds: DataSource, ref: string | undefined): Promise<string> {
  if (ref) return findWorkspace(ds, ref);
  const all = await rows<{ uuid: string; name: string }>(ds, `SELECT uuid, name FROM workspaces ORDER BY created_at`);
  if (all.length === 1) return all[0]!.uuid;
  if (all.length === 0) throw new Error('there is no workspace yet: run `npm start` once first');
  throw new UsageError(
    `there are ${all.length} workspaces: give --workspace (one of ${all.map((w) => w.name).join(', ')})`,
  );
}

const gib = (bytes: number) => `${+(bytes / GIB).toFixed(2)}`;

/** Columns padded to their widest cell. */
function table(header: string[], body: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  return [header, ...body]
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

async function create(config: Config, values: Record<string, string | undefined>): Promise<void> {
  const missing = ['name', 'region', 'plan'].filter((k) => !values[k]);
  if (missing.length > 0) throw new UsageError(`${missing.map((k) => `--${k}`).join(', ')} required\n${USAGE}`);
  if (!(values.plan! in PLANS))
    throw new UsageError(`--plan must be one of ${Object.keys(PLANS).join(', ')}, got "${values.plan}"`);
  const name = values.name!.trim();
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name)) {
    throw new UsageError(
      '--name must be 1-63 letters, digits, dots, dashes or underscores, starting with a letter or digit',
    );
  }
  const base = PLANS[values.plan as PlanName];
  const cpu = positive('cpu', values.cpu) ?? base.cpu_size;
  const ram = (positive('ram', values.ram) ?? base.ram_size / GIB) * GIB;
  const disk = (positive('disk', values.disk) ?? base.disk_size / GIB) * GIB;
  const resized = cpu !== base.cpu_size || ram !== base.ram_size || disk !== base.disk_size;
  const plan = resized
    ? {
        ...base,
        name: `${base.name} ${cpu}x${gib(ram)}`,
        code_name: `${base.plan_type}-${cpu}x${gib(ram)}`,
        description: `${cpu} cores, ${gib(ram)} GiB memory, ${gib(disk)} GiB disk`,
        cpu_size: cpu,
        ram_size: Math.round(ram),
        disk_size: Math.round(disk),
      }
    : base;
  await withDatabase(config, async (ds) => {
    const workspaceUuid = await workspaceOf(ds, values.workspace);
    const uuid = await ds.transaction(async (m) => {
      const regions = await rows<{ id: number; code: string; name: string }>(
        m,
        `SELECT id, code, name FROM regions ORDER BY code`,
      );
      const region = regions.find((r) => r.code === values.region);
      if (!region) {
        throw new Error(
          `no region "${values.region}"; regions: ${regions.map((r) => `${r.code} (${r.name})`).join(', ') || 'none yet (run `npm start` once)'}`,
        );
      }
      await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`compute-resource-name:${workspaceUuid}`]);
      const taken = await rows(m, `SELECT 1 FROM compute_resources WHERE workspace_uuid = $1 AND name = $2`, [
        workspaceUuid,
        name,
      ]);
      if (taken.length > 0)
        throw new Error(
          `a compute resource named "${name}" already exists in this workspace (see \`berth resource list\`)`,
        );
      // the driver this installation runs it with (labelResourcesWithDriver keeps it true at each start)
      return insertComputeResource(m, {
        workspaceUuid,
        regionId: region.id,
        name,
        labels: [`${DRIVER_LABEL_PREFIX}${config.provider}`],
        plan,
        createdBy: null,
      });
    });
    process.stderr.write(
      `compute resource ${name} created: ${plan.plan_type}, ${cpu} cores, ${gib(ram)} GiB memory, ${gib(disk)} GiB disk, region ${values.region}\n`,
    );
    process.stdout.write(`${uuid}\n`);
  });
}

async function list(config: Config, values: Record<string, string | undefined>): Promise<void> {
  await withDatabase(config, async (ds) => {
    const workspaceUuid = values.workspace ? await findWorkspace(ds, values.workspace) : null;
    const list = await rows<{
      uuid: string;
      name: string;
      workspace: string;
      region: string;
      plan_type: string;
      state: string;
      cpu: number;
      ram: string;
      disk: string;
      used_cpu: number;
      used_ram: string;
      used_disk: string;
    }>(
      ds,
      `SELECT c.uuid, c.name, w.name AS workspace, r.code AS region, c.plan->>'plan_type' AS plan_type, c.state,
              c.total_cpu_size AS cpu, c.total_ram_size AS ram, c.total_disk_size AS disk,
              COALESCE(sum(a.cpu_size), 0) AS used_cpu, COALESCE(sum(a.ram_size), 0) AS used_ram, COALESCE(sum(a.disk_size), 0) AS used_disk
         FROM compute_resources c JOIN workspaces w ON w.uuid = c.workspace_uuid JOIN regions r ON r.id = c.region_id
         LEFT JOIN resource_allocations a ON a.resource_uuid = c.uuid
        WHERE $1::uuid IS NULL OR c.workspace_uuid = $1
        GROUP BY c.uuid, w.name, r.code ORDER BY w.name, c.created_at`,
      [workspaceUuid],
    );
    process.stdout.write(
      `${table(
        ['UUID', 'NAME', 'WORKSPACE', 'REGION', 'PLAN', 'STATE', 'CPU (used/total)', 'RAM GiB', 'DISK GiB'],
        list.map((r) => [
          r.uuid,
          r.name,
          r.workspace,
          r.region,
          r.plan_type,
          r.state,
          `${+Number(r.used_cpu).toFixed(2)}/${r.cpu}`,
          `${gib(Number(r.used_ram))}/${gib(Number(r.ram))}`,
          `${gib(Number(r.used_disk))}/${gib(Number(r.disk))}`,
        ]),
      )}\n`,
    );
  });
}

/** `berth resource create|list`: compute resources for the operator (create prints the uuid alone on stdout). */
export async function runResource(config: Config, argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        name: { type: 'string' },
        region: { type: 'string' },
        plan: { type: 'string' },
        cpu: { type: 'string' },
        ram: { type: 'string' },
        disk: { type: 'string' },
        workspace: { type: 'string' },
      },
    }));
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
  }
  if (sub === 'create') return create(config, values);
  if (sub === 'list') return list(config, values);
  throw new UsageError(USAGE);
}
