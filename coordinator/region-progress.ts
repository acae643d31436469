// Progress of a distributed run per region, on stderr: one line redrawn in place on a
// terminal; otherwise a line whenever the counts change, at most every few seconds (at once when
// the jobs found lost change).
export interface RegionProgress {
  /** Jobs done per region out of the region's total, and those lost (not in Redis: a failover). */
  update(done: Map<string, number>, lost?: Map<string, number>): void;
  done(): void;
}

const PLAIN_EVERY_MS = 5_000;

export function regionProgressFor(
  totals: Map<string, number>,
  stream: NodeJS.WriteStream = process.stderr,
): RegionProgress {
  const line = (done: Map<string, number>, lost = new Map<string, number>()) =>
    [...totals]
      .map(([region, total]) => {
        const missing = lost.get(region) ?? 0;
        return `${region} ${done.get(region) ?? 0}/${total}${missing > 0 ? ` (${missing} lost)` : ''}`;
      })
      .join('  ');
  if (stream.isTTY) {
    return {
      update: (done, lost) =>
        stream.write(`\r\x1b[2K${`jobs done per region: ${line(done, lost)}`.slice(0, (stream.columns || 80) - 1)}`),
      done: () => stream.write('\r\x1b[2K'),
    };
  }
  let printed = '';
  let latest = '';
  let printedAt = 0;
  let lostPrinted = 0;
  const print = () => {
    if (latest === printed) return;
    stream.write(`jobs done per region: ${latest}\n`);
    printed = latest;
    printedAt = Date.now();
  };
  return {
    update(done, lost = new Map()) {
      latest = line(done, lost);
      // Jobs found lost are said at once, not at the next interval.
      const lostNow = [...lost.values()].reduce((sum, n) => sum + n, 0);
      if (Date.now() - printedAt >= PLAIN_EVERY_MS || lostNow !== lostPrinted) {
        lostPrinted = lostNow;
        print();
      }
    },
    done: print,
  };
}
