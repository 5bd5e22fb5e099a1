'use strict';
// The post-receive hook of a git_push app's repository (installed by api/git-repos.ts).
// git runs it after a push with `old new ref` lines on stdin; it hands them to Berth
// (BERTH_GIT_HOOK_URL, with the push's one-time secret, both set by api/git-http.ts for
// this push only) and prints Berth's answer as it streams: git shows each line to the
// pusher as `remote: ...` (the deployment's progress, then `deployed: <url>` or
// `failed: <reason>`). Plain CommonJS on Node built-ins: it runs outside the TypeScript app.
const http = require('node:http');
const https = require('node:https');

function main() {
  const url = process.env.BERTH_GIT_HOOK_URL;
  const secret = process.env.BERTH_GIT_HOOK_SECRET;
  const header = process.env.BERTH_GIT_HOOK_SECRET_HEADER || 'X-Berth-Hook-Secret';
  if (!url || !secret) {
    process.stdout.write("Berth: this push did not come through Berth's git endpoint: nothing deployed\n");
    return;
  }
  const chunks = [];
  process.stdin.on('data', (c) => chunks.push(c));
  process.stdin.on('end', () => {
    const body = Buffer.concat(chunks);
    const target = new URL(url);
    const client = target.protocol === 'https:' ? https : http;
    const req = client.request(
      target,
      {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'content-length': body.length, [header]: secret },
      },
      (res) => {
        if (res.statusCode !== 200) {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => {
            text += c;
          });
          res.on('end', () => {
            let detail = text.trim();
            try {
              detail = JSON.parse(text).detail || detail;
            } catch {
              /* not a problem body */
            }
            process.stdout.write(`Berth could not take this push (${res.statusCode}): ${detail}\n`);
          });
          return;
        }
        res.pipe(process.stdout);
      },
    );
    req.on('error', (err) => {
      process.stdout.write(`Berth could not be reached to deploy this push: ${err.message}\n`);
    });
    req.end(body);
  });
}

main();
