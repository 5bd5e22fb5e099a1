import { localStackRefusals } from '../../activities/provider/local/stacks';
import { analyzeCompose } from '../../domain/compose';

const manifestOf = (yaml: string) => analyzeCompose(yaml, 'compose.yaml').manifest;
const everythingInstalled = () => null;

describe('local stacks: what the local driver refuses at validation', () => {
  it('built services and managed database images run: nothing refused, a volume on a database included', () => {
    const m = manifestOf(
      'services:\n  web:\n    build: ./web\n  db:\n    image: postgres:16\n    volumes: [pgdata:/var/lib/postgresql/data]\n  cache:\n    image: redis:7\nvolumes:\n  pgdata: {}\n',
    );
    expect(localStackRefusals(m, everythingInstalled, null)).toEqual([]);
  });

  it('where images do not run: an image that is no managed kind and a Dockerfile are refused with the reason; a context outside the repository, and a volume on a service where volumes cannot be mounted, are each named', () => {
    const m = manifestOf(
      [
        'services:',
        '  proxy:\n    image: nginx:1.27',
        '  api:\n    build:\n      context: .\n      dockerfile: Dockerfile.prod',
        '  up:\n    build: ../elsewhere',
        '  files:\n    build: ./files\n    volumes: [uploads:/data]',
        'volumes:\n  uploads: {}',
      ].join('\n'),
    );
    const noPodman = "this machine lacks Debian's podman package";
    const noMounts = 'mounting a volume at its path needs Berth to run as root';
    expect(localStackRefusals(m, everythingInstalled, noPodman, noMounts)).toEqual([
      `proxy: image "nginx:1.27" cannot run here: ${noPodman}`,
      `api: build.dockerfile "Dockerfile.prod" cannot be built here: ${noPodman}`,
      'up: the build context "../elsewhere" must not contain .. segments',
      `files: the named volumes "uploads" cannot be mounted: ${noMounts}`,
    ]);
    // where podman runs and volumes mount, the image service, the Dockerfile and the volume run
    expect(localStackRefusals(m, everythingInstalled, null, null)).toEqual([
      'up: the build context "../elsewhere" must not contain .. segments',
    ]);
  });

  it("a service's named volumes are mounted where the compose file says (short and long syntax); a path that is not absolute is refused", () => {
    const m = manifestOf(
      [
        'services:',
        '  web:\n    build: .\n    volumes:\n      - uploads:/srv/uploads:ro\n      - type: volume\n        source: cache\n        target: /var/cache/app',
        'volumes:\n  uploads: {}\n  cache: {}',
      ].join('\n'),
    );
    expect(m.services[0]!.mounts).toEqual([
      { volume: 'uploads', path: '/srv/uploads' },
      { volume: 'cache', path: '/var/cache/app' },
    ]);
    expect(() =>
      manifestOf('services:\n  web:\n    build: .\n    volumes: [uploads:data]\nvolumes:\n  uploads: {}\n'),
    ).toThrow('services.web.volumes: volume "uploads" needs an absolute path to be mounted at');
  });

  it('an add-on whose server is not installed is refused with what to install', () => {
    const m = manifestOf('services:\n  web:\n    build: .\n  cache:\n    image: valkey/valkey:8\n');
    expect(
      localStackRefusals(m, (engine) => (engine === 'valkey' ? 'valkey needs valkey-server' : null), null),
    ).toEqual(['cache: valkey needs valkey-server']);
  });
});
