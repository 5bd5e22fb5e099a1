import { localStackRefusals } from '../../activities/provider/local/stacks';
import { analyzeCompose } from '../../domain/compose';

const manifestOf = (yaml: string) => analyzeCompose(yaml, 'compose.yaml').manifest;
const everythingInstalled = () => null;

describe('local stacks: what the local driver refuses at validation', () => {
  it('built services and managed database images run: nothing refused, a volume on a database included', () => {
    const m = manifestOf(
      'services:\n  web:\n    build: ./web\n  db:\n    image: postgres:16\n    volumes: [pgdata:/var/lib/postgresql/data]\n  cache:\n    image: redis:7\nvolumes:\n  pgdata: {}\n',
    );
    expect(localStackRefusals(m, everythingInstalled)).toEqual([]);
  });

  it('an image that is no managed kind, a Dockerfile, a context outside the repository and a volume on a built service are each named', () => {
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
    expect(localStackRefusals(m, everythingInstalled)).toEqual([
      expect.stringMatching(
        /^proxy: image "nginx:1\.27" is not a managed database or cache image .* services built from the repository \(build:\)/,
      ),
      expect.stringMatching(
        /^api: build\.dockerfile "Dockerfile\.prod" cannot be built: the local driver builds no Dockerfiles/,
      ),
      'up: the build context "../elsewhere" must not contain .. segments',
      expect.stringMatching(/^files: the named volumes "uploads" cannot be mounted/),
    ]);
  });

  it('an add-on whose server is not installed is refused with what to install', () => {
    const m = manifestOf('services:\n  web:\n    build: .\n  cache:\n    image: valkey/valkey:8\n');
    expect(localStackRefusals(m, (engine) => (engine === 'valkey' ? 'valkey needs valkey-server' : null))).toEqual([
      'cache: valkey needs valkey-server',
    ]);
  });
});
