// The dns probe's findings: one small rule per finding code, read from the job's lookups and the
// plan's threshold. DNS_RULES is the order they run in.
import { finding, type FindingRule } from '../../contracts/findings.js';
import type { ProbeDetails, ProbeVariant } from '../../contracts/probes/index.js';
import { median, percentile, sortedCopy } from '../../common/stats.js';
import { fmtMs } from '../format.js';

export interface DnsFindingInput {
  variant: ProbeVariant<'dns'>;
  details: Pick<ProbeDetails<'dns'>, 'name' | 'samples' | 'distinctAnswerSets' | 'answerSets'>;
  /** The plan's `slowMs`. */
  slowMs: number;
}

const round = (ms: number) => Math.round(ms * 100) / 100;
const asked = ({ variant, details }: DnsFindingInput) =>
  `${details.name} (${variant.recordType}) from ${variant.resolver}`;

/** DNS_SLOW: the median of the cold lookups that got an answer is over `slowMs`. */
export const dnsSlow: FindingRule<DnsFindingInput> = (input, where) => {
  const { variant, details, slowMs } = input;
  if (variant.cache !== 'cold') return undefined;
  const times = details.samples.flatMap((s) => (s.error || s.fromCache ? [] : [s.ms]));
  if (times.length === 0) return undefined;
  const medianMs = median(times);
  if (medianMs <= slowMs) return undefined;
  const p95Ms = percentile(sortedCopy(times), 95);
  return finding(
    'DNS_SLOW',
    where,
    `cold lookups of ${asked(input)} took ${fmtMs(medianMs)} (median of ${times.length}; p95 ${fmtMs(p95Ms)}), over slowMs ${slowMs} ms`,
    {
      resolver: variant.resolver,
      recordType: variant.recordType,
      medianMs: round(medianMs),
      p95Ms: round(p95Ms),
      lookups: times.length,
      slowMs,
    },
  );
};

/** How a set of addresses reads: "127.0.0.1 127.0.0.2", or "no data" for an empty answer. */
const setText = (answers: readonly string[]) => (answers.length > 0 ? answers.join(' ') : 'no data');

/** DNS_ANSWERS_CHANGE: the answered lookups got more than one set of addresses (order aside). */
export const dnsAnswersChange: FindingRule<DnsFindingInput> = (input, where) => {
  const { variant, details } = input;
  if (details.distinctAnswerSets < 2) return undefined;
  const answered = details.samples.filter((s) => !s.error).length;
  const shown = details.answerSets.slice(0, 3);
  const more = details.distinctAnswerSets - shown.length;
  return finding(
    'DNS_ANSWERS_CHANGE',
    where,
    `${details.distinctAnswerSets} different answers for ${asked(input)} in ${answered} ${variant.cache} lookups: ` +
      shown.map((set) => `${setText(set.answers)} (${set.lookups})`).join(', ') +
      (more > 0 ? ` and ${more} more` : ''),
    {
      resolver: variant.resolver,
      recordType: variant.recordType,
      answerSets: details.distinctAnswerSets,
      lookups: answered,
    },
  );
};

export const DNS_RULES: readonly FindingRule<DnsFindingInput>[] = [dnsSlow, dnsAnswersChange];
