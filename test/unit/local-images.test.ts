import {
  containersConf,
  DEFAULT_ULIMITS,
  podmanConfig,
  storageConf,
} from '../../activities/provider/local/images/config';
import { containerRunArgv, containerWorkload } from '../../activities/provider/local/images/container-run';
import { withoutSecret } from '../../activities/provider/local/images/pull';
import { imageReleaseId } from '../../activities/provider/local/images/pulls';
import {
  isLoopbackRegistry,
  parseImageReference,
  pinnedImage,
  qualifiedImage,
} from '../../activities/provider/local/images/reference';
import { loadConfig } from '../../platform/config';
import { localLayout } from '../../platform/local-layout';

const DIGEST = `sha256:${'ab'.repeat(32)}`;

describe('image references', () => {
  it('qualify as Docker reads them: a registry has a dot, a port or is localhost; else Docker Hub', () => {
    expect(qualifiedImage(parseImageReference('nginx'))).toBe('docker.io/library/nginx:latest');
    expect(qualifiedImage(parseImageReference('acme/web:2'))).toBe('docker.io/acme/web:2');
    expect(qualifiedImage(parseImageReference('127.0.0.1:5000/acme/web:1'))).toBe('127.0.0.1:5000/acme/web:1');
    expect(qualifiedImage(parseImageReference('localhost/web'))).toBe('localhost/web:latest');
    expect(qualifiedImage(parseImageReference(`ghcr.io/a/b@${DIGEST}`))).toBe(`ghcr.io/a/b@${DIGEST}`);
    expect(pinnedImage(parseImageReference('ghcr.io/a/b:3'), DIGEST)).toBe(`ghcr.io/a/b@${DIGEST}`);
    expect(() => pinnedImage(parseImageReference('ghcr.io/a/b:3'), 'sha256:zz')).toThrow(/not an image digest/);
    expect(imageReleaseId(DIGEST)).toBe('image-abababababab');
  });

  it('registries on loopback are plain HTTP, every other one TLS', () => {
    expect(['127.0.0.1:5000', 'localhost:5000', '127.3.2.1', '[::1]:5000'].map(isLoopbackRegistry)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['ghcr.io', '10.0.0.1:5000', '127.0.0.1.example.com'].map(isLoopbackRegistry)).toEqual([
      false,
      false,
      false,
    ]);
  });
});

describe("podman's configuration", () => {
  it('is written under the data directory with the settings this machine kind needs', () => {
    const cfg = podmanConfig(localLayout({ dataDir: '/srv/berth' }));
    expect(cfg.env).toEqual({
      CONTAINERS_CONF: '/srv/berth/local/podman/containers.conf',
      CONTAINERS_STORAGE_CONF: '/srv/berth/local/podman/storage.conf',
    });
    const conf = containersConf(cfg.dir);
    expect(conf).toContain('runtime = "runc"');
    expect(conf).toContain('cgroup_manager = "cgroupfs"');
    expect(conf).toContain('events_logger = "file"');
    expect(conf).toContain('default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]');
    expect(DEFAULT_ULIMITS).toEqual(['nofile=20000:20000', 'nproc=32768:32768']);
    expect(conf).not.toMatch(/\/etc\//);
    expect(storageConf(cfg.dir)).toContain('graphroot = "/srv/berth/local/podman/storage"');
    expect(storageConf(cfg.dir)).toContain('runroot = "/srv/berth/local/podman/run"');
  });
});

describe('podman run of a replica', () => {
  const spec = {
    name: 'berth-app-image-abc-web1-1',
    image: `127.0.0.1:5000/acme/web@${DIGEST}`,
    memoryBytes: 256 * 2 ** 20,
    cpus: 0.5,
    idBase: 1_065_536,
  };

  it("runs the pinned image with --rm --init, the quota, the app's id range (one contiguous map), loopback until a namespace is given", () => {
    const argv = containerRunArgv({ ...spec, envNames: ['PORT'] });
    expect(argv.slice(0, 4)).toEqual(['/usr/bin/podman', 'run', '--rm', '--replace']);
    expect(argv).toEqual(expect.arrayContaining(['--init', '--cgroup-manager', 'cgroupfs']));
    const after = (flag: string) => argv[argv.indexOf(flag) + 1];
    expect([after('--memory'), after('--cpus'), after('--uidmap'), after('--gidmap'), after('--network')]).toEqual([
      '268435456b',
      '0.5',
      '0:1065536:65536',
      '0:1065536:65536',
      'host',
    ]);
    expect(argv.filter((a) => a === '--uidmap')).toHaveLength(1);
    expect(argv.at(-1)).toBe(spec.image);
    const inNs = containerRunArgv({ ...spec, envNames: ['PORT'], netnsPath: '/run/netns/berth-app-1' });
    expect(inNs[inNs.indexOf('--network') + 1]).toBe('ns:/run/netns/berth-app-1');
    expect(argv).not.toContain('--dns');
    const withResolver = containerRunArgv({ ...spec, envNames: ['PORT'], dns: '10.200.0.1' });
    expect(withResolver[withResolver.indexOf('--dns') + 1]).toBe('10.200.0.1');
  });

  it("passes the app's variables by name (their values ride on podman's environment, never its command line)", () => {
    const cfg = podmanConfig(localLayout({ dataDir: '/srv/berth' }));
    const { workload, dropped } = containerWorkload(cfg, spec, {
      DATABASE_URL: 'postgres://u:s3cret@db/x',
      PATH: '/app/bin:/usr/bin',
      CONTAINERS_CONF: '/elsewhere',
    });
    expect(workload.command.join(' ')).not.toContain('s3cret');
    expect(workload.command).toEqual(
      expect.arrayContaining(['--env', 'DATABASE_URL', '--env', 'PORT', '--env', 'PATH=/app/bin:/usr/bin']),
    );
    expect(workload.env).toMatchObject({ DATABASE_URL: 'postgres://u:s3cret@db/x', ...cfg.env });
    expect(workload.env!.PATH).not.toBe('/app/bin:/usr/bin');
    expect([workload.sandbox, workload.listens, dropped]).toEqual([null, true, ['CONTAINERS_CONF']]);
  });

  it("keeps a registry login's secret out of what it says", () => {
    const auth = { server: null, username: 'bot', token: 'tok-123' };
    const b64 = Buffer.from('bot:tok-123').toString('base64');
    expect(withoutSecret(`denied for tok-123 (${b64})`, auth)).toBe('denied for *** (***)');
  });
});

describe('BERTH_REGISTRY', () => {
  it('is the embedded registry by default, off, or an operator registry with its login', () => {
    expect(loadConfig({}).registry).toEqual({ kind: 'embedded' });
    expect(loadConfig({ BERTH_REGISTRY: 'off' }).registry).toEqual({ kind: 'off' });
    expect(
      loadConfig({
        BERTH_REGISTRY: 'registry.example.com:5000',
        BERTH_REGISTRY_USERNAME: 'ci',
        BERTH_REGISTRY_PASSWORD: 'pw',
      }).registry,
    ).toEqual({ kind: 'external', host: 'registry.example.com:5000', username: 'ci', password: 'pw' });
    expect(() => loadConfig({ BERTH_REGISTRY: 'https://registry.example.com/x' })).toThrow(
      /BERTH_REGISTRY: "https:\/\/registry.example.com\/x" is not embedded, off, or a registry's host\[:port\]/,
    );
  });
});
