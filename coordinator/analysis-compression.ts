// The HTTP performance lecture's "JSON/HTML/CSS/JS over 1 KB: gzip level 6" row
// (docs/probes.md#sources), from this run's link model: where compression was served and won on
// the slowest link, say so with the numbers, and say what the fastest link thinks of it.
import type { Decision, ProbeResult, ResultOf } from '../contracts/result.js';
import { formatCount, formatMs } from './report/format.js';

/** One evidence line per compression result whose slowest link gained from compression. */
export function compressionEvidence(results: readonly ProbeResult[]): string[] {
  const evidence: string[] = [];
  for (const result of results) {
    if (result.probe !== 'compression' || !result.details) continue;
    const { linkModel } = (result as ResultOf<'compression'>).details!;
    if (linkModel.length === 0) continue;
    const slowest = linkModel.reduce((a, b) => (b.linkMBps < a.linkMBps ? b : a));
    const fastest = linkModel.reduce((a, b) => (b.linkMBps > a.linkMBps ? b : a));
    const best = slowest.rows.find((r) => r.acceptEncoding === slowest.fastest);
    const identity = slowest.rows.find((r) => r.contentEncoding === null);
    if (!best || !identity || best === identity) continue;
    evidence.push(
      `${result.target} from ${result.region}: ${formatCount(identity.wireBytes)} -> ${formatCount(best.wireBytes)} B on the wire (${best.contentEncoding}), ` +
        `${formatMs(best.totalMs)} vs ${formatMs(identity.totalMs)} at ${slowest.linkMBps} MB/s` +
        (fastest !== slowest ? `; at ${fastest.linkMBps} MB/s ${fastest.recommendation}` : ''),
    );
  }
  return evidence;
}

/** The decision row from every result's evidence (compressionEvidence), or none without any. */
export function compressionDecision(evidence: readonly string[]): Decision | undefined {
  if (evidence.length === 0) return undefined;
  return {
    situation: 'Text over 1 KB (JSON, HTML, CSS, JS) crosses a slow link',
    action:
      'Compress it: gzip level 6 or brotli on the fly, or pre-compressed at deploy time; on fast links the CPU can cost more than the bytes save',
    evidence: evidence.join('; '),
    severity: 'info',
  };
}
