import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { isolatedArgv, type Isolation } from '../../activities/provider/local/sandbox/isolation';
import { mountVariable, volumeAccess } from '../../activities/provider/local/apps/volumes';
import { tempLayout } from '../support/local-apps';

const plain: Isolation = { uidSwitch: false, cgroups: false, cgroupRoot: '/sys/fs/cgroup', summary: 'test' };

describe('storage volumes without mount namespaces (Berth not root)', () => {
  let temp: ReturnType<typeof tempLayout>;
  beforeAll(() => {
    temp = tempLayout();
  });
  afterAll(() => temp.cleanup());

  it('the app finds each volume (its sub_path, created) through BERTH_MOUNT_<PATH>; nothing is mounted', async () => {
    const access = await volumeAccess(temp.layout, plain, [
      { volumeId: 'c-one', subPath: 'team/docs', mountPath: '/data/uploads' },
      { volumeId: 'c-two', subPath: null, mountPath: '/srv/shared-files' },
    ]);
    const docs = path.join(temp.layout.volumeDir('c-one'), 'team', 'docs');
    expect(access.env).toEqual({
      BERTH_MOUNT_DATA_UPLOADS: docs,
      BERTH_MOUNT_SRV_SHARED_FILES: temp.layout.volumeDir('c-two'),
    });
    expect(access.gids).toEqual([]);
    expect(statSync(docs).isDirectory()).toBe(true);
    expect(statSync(temp.layout.volumeDir('c-one')).mode & 0o777).toBe(0o700);
    // the command runs as is: no namespace, no privileges to drop
    const argv = isolatedArgv(
      plain,
      { owner: { kind: 'app', id: 'g' }, uid: 1, binds: access.binds, extraGids: access.gids, umask: access.umask },
      ['/bin/sh', '-c', 'echo hi > "$BERTH_MOUNT_DATA_UPLOADS/hi.txt"'],
    );
    expect(argv).toEqual(['/bin/sh', '-c', 'echo hi > "$BERTH_MOUNT_DATA_UPLOADS/hi.txt"']);
    execFileSync(argv[0]!, argv.slice(1), { env: { ...process.env, ...access.env } });
    expect(readFileSync(path.join(docs, 'hi.txt'), 'utf8')).toBe('hi\n');
    expect(existsSync('/data/uploads/hi.txt')).toBe(false);
  });

  it('mount variables are named after the mount path', () => {
    expect(mountVariable('/data/uploads')).toBe('BERTH_MOUNT_DATA_UPLOADS');
    expect(mountVariable('/var/lib/my-app/files.d/')).toBe('BERTH_MOUNT_VAR_LIB_MY_APP_FILES_D');
  });

  it("with mount namespaces, binds and privilege drop use absolute system binaries (never the app's PATH)", () => {
    const root: Isolation = {
      uidSwitch: true,
      cgroups: false,
      mountNamespaces: true,
      cgroupRoot: '/sys/fs/cgroup',
      summary: 'test',
    };
    const argv = isolatedArgv(
      root,
      {
        owner: { kind: 'app', id: 'g' },
        uid: 200_001,
        extraGids: [200_002],
        binds: [{ source: "/v/it's", target: '/data/x' }],
        umask: 0o007,
      },
      ['run'],
    );
    expect(argv.slice(0, 5)).toEqual([
      expect.stringMatching(/^\/(usr\/)?s?bin\/unshare$/),
      '--mount',
      '--propagation',
      'private',
      '--',
    ]);
    expect(argv[7]).toMatch(
      /^\/(usr\/)?s?bin\/mkdir -p '\/data\/x' && \/(usr\/)?s?bin\/mount --bind '\/v\/it'\\''s' '\/data\/x' && umask 0007 && exec "\$@"$/,
    );
    expect(argv.slice(9)).toEqual([
      expect.stringMatching(/^\/(usr\/)?s?bin\/setpriv$/),
      '--reuid',
      '200001',
      '--regid',
      '200001',
      '--groups',
      '200002',
      '--no-new-privs',
      '--inh-caps=-all',
      '--',
      'run',
    ]);
  });
});
