import { DefaultLogger, Runtime } from '@temporalio/worker';

// Quiet the SDK's own logging in test processes (warnings and errors still show).
try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // already installed in this process
}
