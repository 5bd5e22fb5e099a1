import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { CERTIFICATE_OPERATION } from '../../domain/certificates';
import { dnsTargetOf, domainNameProblem, isUnder, wwwRoot } from '../../domain/domains';
import type { App } from '../../entities/app';
import { ComputeResource } from '../../entities/compute-resource';
import { CustomDomain } from '../../entities/domain';
import { Region } from '../../entities/region';
import { insertReturning, updateReturning, updateWhereReturning } from '../../entities/sql';
import type { Caller } from '../context';
import { conflict, notFound, unprocessable } from '../problem';
import { appForChange, ruleScope } from './apps';
import { deleteOfWorkspace, snapshotOf, type Tx } from './audited-write';

/** A domain of the app, locked for a change when `lock`; else 404. */
export async function findDomain(
  app: Pick<App, 'uuid'>,
  domainUuid: string,
  m: EntityManager,
  lock = false,
): Promise<CustomDomain> {
  const row = await m.findOne(CustomDomain, {
    where: { uuid: domainUuid, app_uuid: app.uuid },
    ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
  });
  if (!row) throw notFound('domain');
  return row;
}

/** A fresh verification token: 24 random bytes, base64url (published as a TXT record). */
function newToken(): string {
  return `berth-verify=${randomBytes(24).toString('base64url')}`;
}

/** Refuses malformed names and the platform's own domains (422), and names taken (409). */
async function checkName(m: EntityManager, name: string, except?: string): Promise<void> {
  const problem = domainNameProblem(name);
  if (problem)
    throw unprocessable(`"${name}" is not a valid domain name: ${problem}`, [
      { path: 'body.domain.name', message: problem },
    ]);
  const platform = await m.find(Region, { select: { id: true, domain: true } });
  const under = platform.find((r) => isUnder(name, r.domain));
  if (under) {
    throw unprocessable(`"${name}" is under the platform domain ${under.domain}; apps get those names automatically`, [
      { path: 'body.domain.name', message: 'platform domains are not custom domains' },
    ]);
  }
  const taken = m.createQueryBuilder(CustomDomain, 'd').where('d.name = :name', { name });
  if (except) taken.andWhere('d.uuid <> :except', { except });
  if (await taken.getExists()) throw conflict(`the domain ${name} is already in use`);
}

/**
 * What a new (or renamed) domain starts as. A www subdomain whose root is verified in the
 * same workspace needs no verification: it is verified at once, pointing at its own app.
 */
async function initialState(
  m: EntityManager,
  caller: Caller,
  app: App,
  name: string,
): Promise<Pick<CustomDomain, 'verification_status' | 'verification_token' | 'dns_target'>> {
  const root = wwwRoot(name);
  if (root) {
    const verifiedRoot = await m.existsBy(CustomDomain, {
      name: root,
      workspace_uuid: caller.workspaceUuid,
      verification_status: 'verified',
    });
    if (verifiedRoot) {
      const region = await m
        .createQueryBuilder(Region, 'r')
        .innerJoin(ComputeResource, 'c', 'c.region_id = r.id')
        .where('c.uuid = :resource', { resource: app.resource_uuid })
        .getOneOrFail();
      return {
        verification_status: 'verified',
        verification_token: null,
        dns_target: dnsTargetOf(app.name, region.domain),
      };
    }
  }
  return { verification_status: 'pending', verification_token: newToken(), dns_target: null };
}

/**
 * A domain verified at once (a www subdomain of a verified root) gets its certificate:
 * its certificate workflow is started, or woken when it runs (a rename), when Berth has an
 * ACME directory (as the verification workflow does for the others).
 */
async function certificateFor(tx: Tx, caller: Caller, domain: CustomDomain): Promise<void> {
  if (domain.verification_status !== 'verified' || !tx.deps.config.acmeDirectory) return;
  await tx.enqueue({
    operation: CERTIFICATE_OPERATION,
    workflow: 'domainCertificate',
    workspaceUuid: caller.workspaceUuid,
    resourceUuid: domain.uuid,
    args: [{ domainUuid: domain.uuid }],
    signal: { name: 'renew' },
  });
}

/** A write the unique index on the name refused is a 409. */
function uniqueViolation(err: unknown, name: string): never {
  if ((err as { code?: string }).code === '23505') throw conflict(`the domain ${name} is already in use`);
  throw err;
}

/** POST /apps/{uuid}/domains: the domain, pending with a verification token (or verified at once: initialState). */
export async function createDomain(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; name: string },
): Promise<CustomDomain> {
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid, false);
  await checkName(tx.m, input.name);
  const domain = (await insertReturning(tx.m, CustomDomain, {
    uuid: randomUUID(),
    workspace_uuid: caller.workspaceUuid,
    app_uuid: app.uuid,
    name: input.name,
    ...(await initialState(tx.m, caller, app, input.name)),
  }).catch((e) => uniqueViolation(e, input.name)))!;
  await tx.audit({ action: 'domain.create', resourceUuid: domain.uuid, before: null, after: snapshotOf(domain) });
  await certificateFor(tx, caller, domain);
  return domain;
}

/** PUT /apps/{uuid}/domains/{domain_uuid}: a new name needs verifying again (409 while a check is in progress); the same name changes nothing. */
export async function renameDomain(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; domainUuid: string; name: string },
): Promise<CustomDomain> {
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid, false);
  const domain = await findDomain(app, input.domainUuid, tx.m, true);
  let after = domain;
  if (domain.name !== input.name) {
    if (domain.verification_status === 'in_progress') {
      throw conflict(
        'verification of this domain is in progress; wait for it to finish (or delete the domain) before renaming it',
      );
    }
    await checkName(tx.m, input.name, domain.uuid);
    after = (await updateReturning(tx.m, CustomDomain, domain.uuid, {
      name: input.name,
      ...(await initialState(tx.m, caller, app, input.name)),
      check_attempts: 0,
      last_check_error: null,
      last_checked_at: null,
    }).catch((e) => uniqueViolation(e, input.name)))!;
    await certificateFor(tx, caller, after);
  }
  await tx.audit({
    action: 'domain.update',
    resourceUuid: domain.uuid,
    before: snapshotOf(domain),
    after: snapshotOf(after),
  });
  return after;
}

/** DELETE /apps/{uuid}/domains/{domain_uuid}: the domain is removed (a verification in progress stops at its next check). */
export async function deleteDomain(tx: Tx, caller: Caller, input: { appUuid: string; domainUuid: string }) {
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid, false);
  const domain = await findDomain(app, input.domainUuid, tx.m, true);
  await deleteOfWorkspace(tx, caller, CustomDomain, { uuid: domain.uuid, action: 'domain.delete', what: 'domain' });
}

/**
 * POST .../verify: a pending or failed domain moves to in_progress and its verification
 * workflow is enqueued; any other is returned unchanged (an accepted request that finds
 * nothing to check still records its empty entry).
 */
export async function verifyDomain(
  tx: Tx,
  caller: Caller,
  input: { appUuid: string; domainUuid: string },
): Promise<CustomDomain> {
  const app = await appForChange(tx, ruleScope(tx, caller), input.appUuid, false);
  const found = await findDomain(app, input.domainUuid, tx.m, true);
  let after = found;
  if (found.verification_status === 'pending' || found.verification_status === 'failed') {
    [after] = (await updateWhereReturning(
      tx.m,
      CustomDomain,
      { verification_status: 'in_progress', check_attempts: 0, last_check_error: null },
      `uuid = :uuid AND verification_status IN ('pending', 'failed')`,
      { uuid: found.uuid },
    )) as [CustomDomain];
    await tx.enqueue({
      operation: 'domain-verify',
      workflow: 'domainVerify',
      workspaceUuid: caller.workspaceUuid,
      resourceUuid: found.uuid,
      args: [{ domainUuid: found.uuid }],
    });
  }
  await tx.audit({
    action: 'domain.verify',
    resourceUuid: found.uuid,
    before: snapshotOf(found),
    after: snapshotOf(after),
  });
  return after;
}
