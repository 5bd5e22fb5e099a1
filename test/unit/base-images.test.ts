import {
  authFileText,
  baseImages,
  loginsFor,
  loginSecrets,
  pullBaseImageArgv,
} from '../../activities/provider/local/images/base-images';
import { qualifiedImage } from '../../activities/provider/local/images/reference';

/**
 * Issue 27, private base images: a Dockerfile build gets the workspace's logins of the
 * registries its FROM lines name, and no other.
 */
describe('the base images of a Dockerfile', () => {
  const names = (text: string) => baseImages(text).map(qualifiedImage);

  it('are the images its FROM lines and COPY --from name, qualified, once each; not scratch, not an earlier stage or its index', () => {
    const dockerfile = [
      '# syntax comment',
      'ARG BASE=registry.example.com/acme/base:2',
      'ARG NODE',
      'FROM --platform=linux/amd64 ${BASE} AS build',
      'RUN make',
      'from node:20 as deps',
      'FROM build AS again',
      'FROM scratch',
      'FROM $NODE',
      'FROM \\',
      '  127.0.0.1:5000/acme/hello:1',
      'FROM registry.example.com/acme/base:2',
      'COPY --from=build /out /out',
      'COPY --from=0 /a /a',
      'COPY --chown=1:1 --from=ghcr.io/acme/tools:3 /bin/tool /bin/tool',
    ].join('\n');
    expect(names(dockerfile)).toEqual([
      'registry.example.com/acme/base:2',
      'docker.io/library/node:20',
      '127.0.0.1:5000/acme/hello:1',
      'ghcr.io/acme/tools:3',
    ]);
  });

  it("an earlier stage's name is no image, even when it was made FROM one", () => {
    expect(names('FROM ghcr.io/acme/tool:1 AS tool\nFROM tool\n')).toEqual(['ghcr.io/acme/tool:1']);
  });
});

describe('the logins a build gets', () => {
  const logins = [
    { server: 'ghcr.io', username: 'newest', token: 'tok-ghcr-new' },
    { server: 'GHCR.io', username: 'older', token: 'tok-ghcr-old' },
    { server: 'index.docker.io', username: 'hub', token: 'tok-hub' },
    { server: 'registry.example.com', username: 'unused', token: 'tok-unused' },
  ];

  it('are those of the registries the FROM lines name, the first given (newest) for each, Docker Hub by any of its names', () => {
    const images = baseImages('FROM ghcr.io/acme/app:1\nFROM node:20\nFROM quay.io/x/y\n');
    expect(loginsFor(images, logins).map((l) => l.username)).toEqual(['newest', 'hub']);
  });

  it('none for a Dockerfile FROM scratch', () => {
    expect(loginsFor(baseImages('FROM scratch\n'), logins)).toEqual([]);
  });

  it('are written as an auth file podman reads, keyed by registry', () => {
    const text = authFileText(loginsFor(baseImages('FROM ghcr.io/a/b\nFROM node\n'), logins));
    expect(JSON.parse(text)).toEqual({
      auths: {
        'ghcr.io': { auth: Buffer.from('newest:tok-ghcr-new').toString('base64') },
        'docker.io': { auth: Buffer.from('hub:tok-hub').toString('base64') },
      },
    });
    expect(loginSecrets(logins[0]!)).toEqual(['tok-ghcr-new', Buffer.from('newest:tok-ghcr-new').toString('base64')]);
  });

  it('a base image is pulled with the auth file, over plain HTTP only from a registry on loopback', () => {
    const [local, remote] = baseImages('FROM 127.0.0.1:5000/a/b:1\nFROM ghcr.io/a/b:1\n');
    expect(pullBaseImageArgv(local!, '/f.json')).toEqual([
      expect.stringMatching(/podman$/),
      'pull',
      '--authfile',
      '/f.json',
      '--tls-verify=false',
      '127.0.0.1:5000/a/b:1',
    ]);
    expect(pullBaseImageArgv(remote!, '/f.json')).not.toContain('--tls-verify=false');
  });
});
