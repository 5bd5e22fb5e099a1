import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { appRunSpec } from '../../activities/app-environment';
import type { SecretBox } from '../../domain/secret-box';
import type { AppRunSpec, BuildStatus } from '../../platform/drivers/apps';
import type {
  AppEventSink,
  Backend,
  IngressRoutes,
  LocalBuilder,
  ReleaseManifest,
} from '../../activities/provider/local/contracts';
import { appUid, localLayout, releaseImage, type LocalLayout } from '../../platform/local-layout';
import { ROOT } from './env';

/** A data dir and an apps root of their own (the apps root traversable, as when Berth is root). */
export function tempLayout(): { layout: LocalLayout; dataDir: string; cleanup(): void } {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'berth-data-'));
  const appsDir = mkdtempSync(path.join(os.tmpdir(), 'berth-apps-'));
  chmodSync(appsDir, 0o711);
  return {
    layout: localLayout({ dataDir, appsDir }),
    dataDir,
    cleanup() {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(appsDir, { recursive: true, force: true });
    },
  };
}

/**
 * A stand-in for the local builder: a "build" copies a fixture folder of test/fixtures/apps
 * (named by the source's repository) into a release directory owned by the app and writes
 * the manifest beside it (Procfile's web command).
 */
export class FixtureBuilder implements LocalBuilder {
  private readonly builds = new Map<string, BuildStatus>();
  /** The fixture the app's next builds take (default: the source's repository as a fixture name). */
  readonly fixtures = new Map<string, string>();

  constructor(
    private readonly layout: LocalLayout,
    private readonly uidSwitch: boolean,
  ) {}

  /** Builds the fixture as a release of the app at once; answers the release id. */
  release(appUuid: string, fixture: string): string {
    const releaseId = `r${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
    this.place(appUuid, releaseId, path.join(ROOT, 'test', 'fixtures', 'apps', fixture));
    return releaseId;
  }

  image(appUuid: string, fixture: string): string {
    return releaseImage(appUuid, this.release(appUuid, fixture));
  }

  private place(appUuid: string, releaseId: string, from: string): void {
    const dir = this.layout.releaseDir(appUuid, releaseId);
    cpSync(from, dir, { recursive: true });
    const procfile = path.join(dir, 'Procfile');
    const web = existsSync(procfile) ? (/^web:\s*(.+)$/m.exec(readFileSync(procfile, 'utf8'))?.[1] ?? null) : null;
    const manifest: ReleaseManifest = {
      releaseId,
      appUuid,
      commitSha: null,
      kind: web ? 'process' : 'static',
      stack: web ? 'procfile' : 'static',
      web,
      staticRoot: web ? null : '.',
      path: ['node_modules/.bin'],
      builtAt: new Date().toISOString(),
    };
    writeFileSync(this.layout.releaseManifest(appUuid, releaseId), JSON.stringify(manifest));
    if (this.uidSwitch) execFileSync('chown', ['-R', `0:${appUid(appUuid)}`, dir]);
    execFileSync('chmod', ['-R', 'u=rwX,g=rX,o=', dir]);
  }

  async start(input: { appUuid: string; deploymentUuid: string; source: { repository: string } }): Promise<void> {
    if (this.builds.has(input.deploymentUuid)) return;
    const releaseId = this.release(input.appUuid, this.fixtures.get(input.appUuid) ?? input.source.repository);
    this.builds.set(input.deploymentUuid, { status: 'succeeded', image: releaseImage(input.appUuid, releaseId) });
  }

  async status(deploymentUuid: string): Promise<BuildStatus> {
    return this.builds.get(deploymentUuid) ?? { status: 'failed', reason: 'no such build' };
  }

  async cancel(deploymentUuid: string): Promise<void> {
    this.builds.set(deploymentUuid, { status: 'cancelled' });
  }

  async manifest(appUuid: string, releaseId: string): Promise<ReleaseManifest | null> {
    try {
      return JSON.parse(readFileSync(this.layout.releaseManifest(appUuid, releaseId), 'utf8')) as ReleaseManifest;
    } catch {
      return null;
    }
  }

  async copyRelease(fromAppUuid: string, releaseId: string, toAppUuid: string): Promise<string> {
    const copy = `${releaseId}c${randomBytes(2).toString('hex')}`;
    this.place(toAppUuid, copy, this.layout.releaseDir(fromAppUuid, releaseId));
    return copy;
  }
}

/** The ingress as a table the test reads. */
export class RecordingIngress implements IngressRoutes {
  readonly backends = new Map<string, Backend[]>();
  readonly removed: string[] = [];

  setBackends(appUuid: string, backends: Backend[]): void {
    this.backends.set(appUuid, backends);
  }

  remove(appUuid: string): void {
    this.backends.delete(appUuid);
    this.removed.push(appUuid);
  }

  ports(appUuid: string): number[] {
    return (this.backends.get(appUuid) ?? []).map((b) => (b.kind === 'process' ? b.port : -1));
  }
}

export type RecordedEvent = {
  appUuid: string;
  kind: 'health' | 'liveStatus' | 'traffic';
  value: string;
  detail?: string;
};

/** The app workflows' signals as a list. */
export class RecordingSink implements AppEventSink {
  readonly events: RecordedEvent[] = [];

  async health(appUuid: string, event: string, detail: string): Promise<void> {
    this.events.push({ appUuid, kind: 'health', value: event, detail });
  }

  async liveStatus(appUuid: string, status: string): Promise<void> {
    this.events.push({ appUuid, kind: 'liveStatus', value: status });
  }

  async traffic(appUuid: string): Promise<void> {
    this.events.push({ appUuid, kind: 'traffic', value: 'traffic' });
  }

  of(appUuid: string): RecordedEvent[] {
    return this.events.filter((e) => e.appUuid === appUuid);
  }
}

/** Sets the app's own variables in the control plane (sealed, as the API stores them). */
export async function setAppVariables(
  ds: DataSource,
  box: SecretBox,
  appUuid: string,
  env: Record<string, string>,
): Promise<void> {
  for (const [key, value] of Object.entries(env))
    await ds.query(
      `INSERT INTO app_variables (app_uuid, key, value_sealed) VALUES ($1, $2, $3)
       ON CONFLICT (app_uuid, key) DO UPDATE SET value_sealed = EXCLUDED.value_sealed`,
      [appUuid, key, box.seal(value)],
    );
}

/**
 * The run spec the control plane hands the driver for the app now (its row's quota, health
 * checks and volumes; its variables), with `env` over its variables.
 */
export async function runSpecOf(
  ds: DataSource,
  box: SecretBox,
  appUuid: string,
  env: Record<string, string> = {},
): Promise<AppRunSpec> {
  const spec = await appRunSpec(ds, box, appUuid);
  return { ...spec, env: { ...spec.env, ...env } };
}
