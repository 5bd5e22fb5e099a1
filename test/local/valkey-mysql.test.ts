import { resp } from '../../activities/provider/local/data/valkey';
import { run } from '../../activities/provider/local/data/commands';
import { localDataHarness, specFor, type LocalDataHarness } from '../support/local-data';

describe('local driver: valkey and mysql servers', () => {
  let h: LocalDataHarness;
  beforeAll(async () => {
    h = await localDataHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('valkey: SET and GET with the generated password over the reported endpoint; reset empties it; a wrong password is refused', async () => {
    expect(h.driver.supports('valkey')).toBeNull();
    const spec = specFor('valkey');
    await h.driver.provision(spec);
    const s = await h.driver.status(spec.id);
    expect(s).toMatchObject({ status: 'healthy', ready: true });
    const { host, port } = s.endpoint!;
    expect(port).not.toBe(6379);
    expect(
      await resp(host, port, [
        ['AUTH', 'default', spec.password!],
        ['SET', 'greeting', 'hello'],
        ['GET', 'greeting'],
      ]),
    ).toEqual(['+OK', '+OK', '$5', 'hello']);
    expect((await resp(host, port, [['AUTH', 'default', 'wrong-password']]))[0]).toMatch(/^-(WRONGPASS|ERR)/);
    expect((await resp(host, port, [['GET', 'greeting']]))[0]).toMatch(/^-NOAUTH/);
    await h.driver.reset(spec.id);
    expect(
      await resp(host, port, [
        ['AUTH', 'default', spec.password!],
        ['GET', 'greeting'],
      ]),
    ).toEqual(['+OK', '$-1']);
    await h.driver.delete(spec.id);
    await expect(resp(host, port, [['PING']])).rejects.toThrow();
  });

  it('mysql: the generated user creates, writes and reads its database with the mariadb client', async () => {
    expect(h.driver.supports('mysql')).toBeNull();
    const spec = specFor('mysql');
    await h.driver.provision(spec);
    const s = await h.driver.status(spec.id);
    expect(s).toMatchObject({ status: 'healthy', ready: true });
    const sql = (q: string, password = spec.password!) =>
      run(
        [
          'mariadb',
          '--no-defaults',
          '-h',
          s.endpoint!.host,
          '-P',
          String(s.endpoint!.port),
          '-u',
          spec.username!,
          '-N',
          '-B',
          spec.database!,
          '-e',
          q,
        ],
        { env: { ...process.env, MYSQL_PWD: password } },
      );
    await sql('CREATE TABLE t (v int); INSERT INTO t VALUES (1), (2)');
    expect((await sql('SELECT v FROM t ORDER BY v')).trim().split('\n')).toEqual(['1', '2']);
    await expect(sql('SELECT 1', 'wrong-password')).rejects.toThrow(/Access denied/);
    await h.driver.delete(spec.id);
  });

  it('storage volumes are folders with their sub paths; reset empties one', async () => {
    const spec = specFor('storage');
    await h.driver.provision(spec);
    expect(await h.driver.status(spec.id)).toMatchObject({ status: 'bound', ready: true });
    await h.driver.setBackups(spec.id, false);
    await h.driver.ensureSubPath(spec.id, 'a/b');
    expect(await h.driver.listBackups(spec.id)).toEqual([]);
    await h.driver.delete(spec.id);
    await expect(h.driver.status(spec.id)).rejects.toThrow(/no such cluster/);
  });

  it('with the binaries absent, valkey and mysql are refused naming what to install', async () => {
    const bare = await localDataHarness({ binaries: { searchPath: '/nonexistent' }, db: h.db });
    try {
      expect(bare.driver.supports('valkey')).toMatch(/valkey-server \(or redis-server\).*BERTH_VALKEY_SERVER/);
      expect(bare.driver.supports('mysql')).toMatch(/mariadbd \(or mysqld\).*BERTH_MYSQL_SERVER/);
      expect(bare.driver.supports('postgres')).toBeNull();
      await expect(bare.driver.provision(specFor('valkey'))).rejects.toThrow(/valkey-server/);
    } finally {
      await bare.close();
    }
  });
});
