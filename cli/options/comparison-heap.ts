// --comparison-heap-mb: the heap of the thread a comparison is made in (`compare`, and the
// coordinator's comparison of each run it finishes); a comparison that needs more fails, naming it.
import type { Argv } from 'yargs';
import { BadArgumentError } from '../../common/bad-input.js';
import { COMPARISON_HEAP_MB, MIN_COMPARISON_HEAP_MB } from '../../coordinator/compare/compare-thread.js';

export const comparisonHeapArgs = <T>(y: Argv<T>) =>
  y.option('comparison-heap-mb', {
    type: 'number',
    default: COMPARISON_HEAP_MB,
    describe: "the heap of a comparison's thread, in MB: a comparison that needs more fails and says so",
  });

export function comparisonHeapMbOf(args: { comparisonHeapMb: number }): number {
  const mb = args.comparisonHeapMb;
  if (!Number.isSafeInteger(mb) || mb < MIN_COMPARISON_HEAP_MB)
    throw new BadArgumentError(
      `--comparison-heap-mb: a whole number of MB, at least ${MIN_COMPARISON_HEAP_MB} (got "${mb}")`,
    );
  return mb;
}
