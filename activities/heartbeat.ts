import { Context } from '@temporalio/activity';

/**
 * Awaits `work` while telling Temporal the activity is alive: a heartbeat every `everyMs`
 * with what it is doing and for how long, so a long copy or initdb is judged by its
 * heartbeat timeout, not by a guess at its total length, and a worker that died is noticed
 * within that timeout. Outside an activity (a direct call in a test) it only awaits.
 */
export async function whileHeartbeating<T>(what: string, work: Promise<T>, everyMs = 5000): Promise<T> {
  let ctx: Context | null = null;
  try {
    ctx = Context.current();
  } catch {
    return work;
  }
  const started = Date.now();
  const beat = () => ctx!.heartbeat({ doing: what, seconds: Math.round((Date.now() - started) / 1000) });
  beat();
  const timer = setInterval(beat, everyMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
