/**
 * A stand-in for a Berth worker process that starts one local build and stays up until it
 * is killed: the restart tests kill it (SIGKILL) mid-build and read the build from a new
 * builder. Run with tsx: <data dir> <apps dir> <app uuid> <deployment uuid> <repository> <commit>.
 */
import { LocalReleaseBuilder } from '../../activities/provider/local/builds/builder';
import { detectIsolation } from '../../activities/provider/local/sandbox/isolation';
import { localLayout } from '../../platform/local-layout';
import { createLogger } from '../../platform/logger';

const [dataDir, appsDir, appUuid, deploymentUuid, repository, commitSha] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const builder = new LocalReleaseBuilder({
  layout: localLayout({ dataDir, appsDir }),
  isolation: detectIsolation(),
  logger: createLogger('warn'),
  allowFileUrls: true,
});
void builder
  .start({ appUuid, deploymentUuid, source: { repository, commitSha } })
  .then(() => process.stdout.write('started\n'));
setInterval(() => undefined, 60_000);
