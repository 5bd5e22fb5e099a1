import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ip } from './namespace';
import { blockAt, blockCount, formatCidr, gatewayOf, type Cidr } from '../../../../platform/workload-addresses';

/** The label of the instance's gateway address on the host's loopback (15 characters at most). */
const gatewayLabel = (tag: string) => `lo:bw${tag}`;

/**
 * The instance's /22 block of the platform range. Claimed with a blackhole route (the kernel
 * refuses a second claim of the same block, so instances on one machine never collide) and
 * marked by the block's gateway address on the host's loopback, labelled with the instance's
 * tag. The block's index is kept in `<data>/network/block`: a restarted instance takes the
 * same block back (its gateway, where add-on servers and the resolver are, stays the same).
 */
export async function claimBlock(dataDir: string, range: Cidr, tag: string): Promise<Cidr> {
  const stateDir = path.join(dataDir, 'network');
  mkdirSync(stateDir, { recursive: true });
  const blockFile = path.join(stateDir, 'block');
  const label = gatewayLabel(tag);
  const ours = async (b: Cidr) =>
    (await ip(['-4', 'addr', 'show', 'dev', 'lo', 'label', label])).includes(`${gatewayOf(b)}/32`);
  const claim = async (b: Cidr) => {
    try {
      await ip(['route', 'add', 'blackhole', formatCidr(b)]);
    } catch (err) {
      if (/File exists/.test((err as Error).message)) return false;
      throw err;
    }
    await ip(['addr', 'add', `${gatewayOf(b)}/32`, 'dev', 'lo', 'label', label]);
    return true;
  };
  const count = blockCount(range);
  const remembered = existsSync(blockFile) ? Number(readFileSync(blockFile, 'utf8')) : NaN;
  if (Number.isInteger(remembered) && remembered >= 0 && remembered < count) {
    const b = blockAt(range, remembered);
    if ((await ours(b)) || (await claim(b))) return b;
  }
  const start = Number.parseInt(tag, 16) % count;
  for (let i = 0; i < count; i++) {
    const index = (start + i) % count;
    if (await claim(blockAt(range, index))) {
      writeFileSync(blockFile, String(index));
      return blockAt(range, index);
    }
  }
  throw new Error(`workload network: every /22 block of ${formatCidr(range)} is taken on this machine`);
}

/** Gives the block back: its gateway address and its blackhole route (idempotent). */
export async function releaseBlock(block: Cidr): Promise<void> {
  await ip(['addr', 'del', `${gatewayOf(block)}/32`, 'dev', 'lo']).catch(() => {});
  await ip(['route', 'del', 'blackhole', formatCidr(block)]).catch(() => {});
}
