import { createHash, createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { request } from 'node:http';
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { seedWorkspace, type Workspace } from '../support/fixtures';
import { startObjectStore } from '../support/object-store';
import { eventually, startStack, type TestStack } from '../support/stack';

/**
 * The object store seen from the attacker's side (issue 25, item 6): real HTTP against the
 * real embedded store, with the keys the API hands out. Every request needs a valid SigV4
 * signature of the addressed bucket's own key (or the operator's); a public bucket's objects
 * are readable anonymously, nothing else is.
 */

let stack: TestStack;
let ws: Workspace;
let store: Awaited<ReturnType<typeof startObjectStore>>;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

interface BucketView {
  uuid: string;
  name: string;
  s3_endpoint: string;
  s3_access_key: string;
  s3_secret_key: string;
  public_endpoint: string | null;
}
let a: BucketView;
let b: BucketView;
let pub: BucketView;

async function createActive(label: string, visibility = 'private_access'): Promise<BucketView> {
  const res = await stack.http
    .post('/api/v1/buckets')
    .set(auth(ws.ownerToken))
    .send({ label, resource_id: ws.resourceUuid, visibility });
  expect(res.status).toBe(201);
  await eventually(
    async () =>
      (await stack.http.get(`/api/v1/buckets/${res.body.uuid}`).set(auth(ws.ownerToken))).body.state === 'active',
    { what: 'bucket active' },
  );
  return res.body as BucketView;
}

function client(accessKeyId: string, secretAccessKey: string): S3Client {
  return new S3Client({
    endpoint: store.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
  });
}
const keysOf = (x: BucketView) => client(x.s3_access_key, x.s3_secret_key);

/** The S3 error code an SDK call fails with (null when it succeeds). */
async function refusal(call: Promise<unknown>): Promise<string | null> {
  try {
    await call;
    return null;
  } catch (err) {
    return (err as { name: string }).name;
  }
}

interface RawResponse {
  status: number;
  body: string;
}

/** One plain HTTP request to the store (the Host header may name a bucket's public_endpoint). */
function raw(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
): Promise<RawResponse> {
  const { hostname, port } = new URL(store.endpoint);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A request signed with SigV4 header authentication by the AWS SDK's signer (used to tamper with it after). */
async function signed(
  keys: { id: string; secret: string },
  method: string,
  path: string,
  body = '',
  signingDate = new Date(),
  extraHeaders: Record<string, string> = {},
): Promise<{ headers: Record<string, string>; path: string; body: string }> {
  const { host } = new URL(store.endpoint);
  const signer = new SignatureV4({
    service: 's3',
    region: 'us-east-1',
    credentials: { accessKeyId: keys.id, secretAccessKey: keys.secret },
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: false,
  });
  const req = await signer.sign(
    new HttpRequest({
      method,
      hostname: host,
      path,
      headers: { host, 'x-amz-content-sha256': createHash('sha256').update(body).digest('hex'), ...extraHeaders },
    }),
    { signingDate },
  );
  return { headers: req.headers, path, body };
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * An aws-chunked body signed chunk by chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), computed
 * here from AWS's description of it: each chunk's signature chains from the previous one.
 */
function signedChunks(secret: string, date: string, seed: string, chunks: string[]): string {
  const day = date.slice(0, 8);
  const key = ['us-east-1', 's3', 'aws4_request'].reduce((k, part) => hmac(k, part), hmac(`AWS4${secret}`, day));
  let previous = seed;
  let out = '';
  for (const chunk of [...chunks, '']) {
    const toSign = [
      'AWS4-HMAC-SHA256-PAYLOAD',
      date,
      `${day}/us-east-1/s3/aws4_request`,
      previous,
      sha256(''),
      sha256(chunk),
    ];
    previous = createHmac('sha256', key).update(toSign.join('\n')).digest('hex');
    out += `${Buffer.byteLength(chunk).toString(16)};chunk-signature=${previous}\r\n${chunk}\r\n`;
  }
  return out;
}

const isAccessDenied = (r: RawResponse) =>
  r.status === 403 && r.body.includes('<Code>AccessDenied</Code>') && r.body.startsWith('<?xml');

beforeAll(async () => {
  store = await startObjectStore();
  stack = await startStack({ objectStore: store });
  ws = await seedWorkspace(stack.ds);
  await stack.startWorker();
  [a, b, pub] = await Promise.all([
    createActive('tenant a'),
    createActive('tenant b'),
    createActive('public assets', 'public_access'),
  ]);
  const operator = client(store.accessKeyId, store.secretAccessKey);
  for (const x of [a, b, pub])
    await operator.send(new PutObjectCommand({ Bucket: x.name, Key: 'secret.txt', Body: `data of ${x.name}` }));
});
afterAll(async () => {
  await stack.close();
  await store.dispose();
});

describe('object store credentials (issue 25 item 6)', () => {
  it('BKT-04 an anonymous ListBuckets and CreateBucket are refused with AccessDenied (XML, 403) and create nothing', async () => {
    expect(isAccessDenied(await raw('GET', '/'))).toBe(true);
    expect(isAccessDenied(await raw('PUT', '/intruder-bucket'))).toBe(true);
    const operator = client(store.accessKeyId, store.secretAccessKey);
    expect(await refusal(operator.send(new HeadBucketCommand({ Bucket: 'intruder-bucket' })))).toBe('NotFound');
  });

  it('BKT-02 BKT-04 anonymous PutObject and GetObject on a private bucket are refused with AccessDenied', async () => {
    expect(isAccessDenied(await raw('GET', `/${a.name}/secret.txt`))).toBe(true);
    expect((await raw('HEAD', `/${a.name}/secret.txt`)).status).toBe(403);
    expect(isAccessDenied(await raw('GET', `/${a.name}?list-type=2`))).toBe(true);
    expect(isAccessDenied(await raw('PUT', `/${a.name}/planted.txt`, { 'content-type': 'text/plain' }, 'evil'))).toBe(
      true,
    );
    const operator = client(store.accessKeyId, store.secretAccessKey);
    expect(await refusal(operator.send(new GetObjectCommand({ Bucket: a.name, Key: 'planted.txt' })))).toBe(
      'NoSuchKey',
    );
  });

  it("BKT-04 a bucket's keys read and write that bucket", async () => {
    const s3 = keysOf(a);
    await s3.send(new PutObjectCommand({ Bucket: a.name, Key: 'mine.txt', Body: 'written with my keys' }));
    const got = await s3.send(new GetObjectCommand({ Bucket: a.name, Key: 'mine.txt' }));
    expect(await got.Body!.transformToString()).toBe('written with my keys');
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: a.name }));
    expect(listed.Contents?.map((o) => o.Key)).toEqual(expect.arrayContaining(['mine.txt', 'secret.txt']));
  });

  it("BKT-04 bucket A's keys are refused on bucket B (list, read, write, copy out of B) and cannot list, create or delete buckets", async () => {
    const s3 = keysOf(a);
    expect(await refusal(s3.send(new ListObjectsV2Command({ Bucket: b.name })))).toBe('AccessDenied');
    expect(await refusal(s3.send(new GetObjectCommand({ Bucket: b.name, Key: 'secret.txt' })))).toBe('AccessDenied');
    expect(await refusal(s3.send(new PutObjectCommand({ Bucket: b.name, Key: 'x', Body: 'x' })))).toBe('AccessDenied');
    expect(
      await refusal(
        s3.send(new CopyObjectCommand({ Bucket: a.name, Key: 'stolen.txt', CopySource: `${b.name}/secret.txt` })),
      ),
    ).toBe('AccessDenied');
    expect(await refusal(s3.send(new ListBucketsCommand({})))).toBe('AccessDenied');
    expect(await refusal(s3.send(new CreateBucketCommand({ Bucket: 'made-by-a-tenant' })))).toBe('AccessDenied');
    expect(await refusal(s3.send(new DeleteBucketCommand({ Bucket: a.name })))).toBe('AccessDenied');
    const operator = client(store.accessKeyId, store.secretAccessKey);
    expect(await refusal(operator.send(new GetObjectCommand({ Bucket: a.name, Key: 'stolen.txt' })))).toBe('NoSuchKey');
  });

  it('BKT-04 an unknown key, a wrong secret, a tampered signature, a replayed signature on another path and a stale date are refused', async () => {
    expect(
      await refusal(
        client('BRTNOTAKEY000000000000', a.s3_secret_key).send(new ListObjectsV2Command({ Bucket: a.name })),
      ),
    ).toBe('AccessDenied');
    expect(
      await refusal(client(a.s3_access_key, `${a.s3_secret_key}x`).send(new ListObjectsV2Command({ Bucket: a.name }))),
    ).toBe('AccessDenied');
    const keys = { id: a.s3_access_key, secret: a.s3_secret_key };
    const good = await signed(keys, 'GET', `/${a.name}/secret.txt`);
    expect((await raw('GET', good.path, good.headers)).status).toBe(200);
    // one hex digit of the signature changed
    const sig = /Signature=([0-9a-f]+)/.exec(good.headers.authorization!)![1]!;
    const flipped = `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`;
    const tampered = { ...good.headers, authorization: good.headers.authorization!.replace(sig, flipped) };
    expect(isAccessDenied(await raw('GET', good.path, tampered))).toBe(true);
    // the same valid signature sent for another object
    expect(isAccessDenied(await raw('GET', `/${a.name}/mine.txt`, good.headers))).toBe(true);
    // a signature made 20 minutes ago
    const stale = await signed(keys, 'GET', `/${a.name}/secret.txt`, '', new Date(Date.now() - 20 * 60_000));
    const skewed = await raw('GET', stale.path, stale.headers);
    expect(skewed.status).toBe(403);
    expect(skewed.body).toContain('<Code>RequestTimeTooSkewed</Code>');
  });

  it('BKT-04 a body that is not the one signed is refused and not stored', async () => {
    const put = await signed({ id: a.s3_access_key, secret: a.s3_secret_key }, 'PUT', `/${a.name}/swapped.txt`, 'good');
    const res = await raw('PUT', put.path, { ...put.headers, 'content-length': '4' }, 'evil');
    expect(res.status).toBe(400);
    expect(res.body).toContain('<Code>XAmzContentSHA256Mismatch</Code>');
    const ok = await raw('PUT', put.path, { ...put.headers, 'content-length': '4' }, 'good');
    expect(ok.status).toBe(200);
    const got = await keysOf(a).send(new GetObjectCommand({ Bucket: a.name, Key: 'swapped.txt' }));
    expect(await got.Body!.transformToString()).toBe('good');
  });

  it('BKT-04 aws-chunked uploads: an SDK stream upload is stored as sent; a signed chunk that was altered is refused and not stored', async () => {
    const s3 = keysOf(a);
    // an SDK client as it comes (flexible checksums on): a stream body goes aws-chunked with a checksum trailer
    const asItComes = new S3Client({
      endpoint: store.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: a.s3_access_key, secretAccessKey: a.s3_secret_key },
    });
    const text = 'streamed by an SDK client '.repeat(2000);
    await asItComes.send(
      new PutObjectCommand({
        Bucket: a.name,
        Key: 'streamed.txt',
        Body: Readable.from([Buffer.from(text)]),
        ContentLength: Buffer.byteLength(text),
      }),
    );
    const got = await s3.send(new GetObjectCommand({ Bucket: a.name, Key: 'streamed.txt' }));
    expect(await got.Body!.transformToString()).toBe(text);

    const chunks = ['first chunk, ', 'second chunk'];
    const sendChunked = async (key: string, alter: (body: string) => string) => {
      const headers = {
        'content-encoding': 'aws-chunked',
        'x-amz-decoded-content-length': String(chunks.join('').length),
      };
      const put = await signed(
        { id: a.s3_access_key, secret: a.s3_secret_key },
        'PUT',
        `/${a.name}/${key}`,
        '',
        new Date(),
        {
          ...headers,
          'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
        },
      );
      const seed = /Signature=([0-9a-f]+)/.exec(put.headers.authorization!)![1]!;
      const body = alter(signedChunks(a.s3_secret_key, put.headers['x-amz-date']!, seed, chunks));
      return raw('PUT', put.path, { ...put.headers, 'content-length': String(Buffer.byteLength(body)) }, body);
    };
    expect((await sendChunked('chunked.txt', (b) => b)).status).toBe(200);
    const stored = await s3.send(new GetObjectCommand({ Bucket: a.name, Key: 'chunked.txt' }));
    expect(await stored.Body!.transformToString()).toBe('first chunk, second chunk');
    const altered = await sendChunked('altered.txt', (b) => b.replace('second chunk', 'SECOND CHUNK'));
    expect(isAccessDenied(altered)).toBe(true);
    expect(await refusal(s3.send(new GetObjectCommand({ Bucket: a.name, Key: 'altered.txt' })))).toBe('NoSuchKey');
  });

  it('BKT-02 BKT-03 a public bucket is readable anonymously at its public_endpoint, never writable or listable that way', async () => {
    const host = new URL(pub.public_endpoint!).host;
    const read = await raw('GET', '/secret.txt', { host });
    expect(read.status).toBe(200);
    expect(read.body).toBe(`data of ${pub.name}`);
    expect((await raw('HEAD', '/secret.txt', { host })).status).toBe(200);
    expect((await raw('GET', `/${pub.name}/secret.txt`)).status).toBe(200);
    expect(isAccessDenied(await raw('PUT', '/planted.txt', { host }, 'evil'))).toBe(true);
    expect(isAccessDenied(await raw('DELETE', '/secret.txt', { host }))).toBe(true);
    expect(isAccessDenied(await raw('GET', '/', { host }))).toBe(true);
    expect(isAccessDenied(await raw('GET', '/?list-type=2', { host }))).toBe(true);
    expect(isAccessDenied(await raw('GET', '/secret.txt?acl', { host }))).toBe(true);
    expect(isAccessDenied(await raw('PUT', `/${pub.name}/planted.txt`, {}, 'evil'))).toBe(true);
    // the public endpoint of one bucket is not a way into another
    expect(isAccessDenied(await raw('GET', '/secret.txt', { host: `${a.name}.storage.local.berth.localhost` }))).toBe(
      true,
    );
  });

  it('BKT-02 a visibility change through the API opens and closes anonymous reads on the store', async () => {
    const path = `/${b.name}/secret.txt`;
    expect(isAccessDenied(await raw('GET', path))).toBe(true);
    await stack.http
      .put(`/api/v1/buckets/${b.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ visibility: 'public_access' })
      .expect(200);
    expect((await raw('GET', path)).status).toBe(200);
    await stack.http
      .put(`/api/v1/buckets/${b.uuid}`)
      .set(auth(ws.ownerToken))
      .send({ visibility: 'private_access' })
      .expect(200);
    expect(isAccessDenied(await raw('GET', path))).toBe(true);
  });

  it('BKT-10 a presigned download link works; the same link tampered with, or for another object, is refused', async () => {
    const res = await stack.http
      .post(`/api/v1/buckets/${a.uuid}/objects/download_url`)
      .set(auth(ws.ownerToken))
      .send({ key: 'secret.txt' });
    expect(res.status).toBe(200);
    const url = new URL(res.body.url);
    const ok = await raw('GET', `${url.pathname}${url.search}`);
    expect(ok.status).toBe(200);
    expect(ok.body).toBe(`data of ${a.name}`);
    const sig = url.searchParams.get('X-Amz-Signature')!;
    const tampered = new URL(url);
    tampered.searchParams.set('X-Amz-Signature', `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`);
    expect(isAccessDenied(await raw('GET', `${tampered.pathname}${tampered.search}`))).toBe(true);
    expect(isAccessDenied(await raw('GET', `/${a.name}/mine.txt${url.search}`))).toBe(true);
    const longer = new URL(url);
    longer.searchParams.set('X-Amz-Expires', '604800');
    expect(isAccessDenied(await raw('GET', `${longer.pathname}${longer.search}`))).toBe(true);
  });
});
