// The quantities a run is judged by: what a comparison compares with its baseline and what a
// plan's thresholds bound. Each has a unit and a direction; the ids are the metric label
// `quantity` and the names a plan writes.
import { PHASES, type Phase } from './common.js';
import { ACCEPT_ENCODINGS, type AcceptEncoding } from './probes/compression.js';

export const QUANTITY_UNITS = ['ms', 'bytes', 'share', 'per_second'] as const;
export type QuantityUnit = (typeof QUANTITY_UNITS)[number];

/**
 * Which way is worse. `side-that-moved`: the new-connection cost is median(new) − median(reused),
 * so it falls both when new connections get cheaper and when reused requests get slower; its
 * change is judged by whichever of the two medians moved more.
 */
export type Better = 'lower' | 'higher' | 'side-that-moved';

export interface QuantitySpec {
  /** In tables: "total p50", "handshake resumed p95". */
  label: string;
  unit: QuantityUnit;
  better: Better;
}

type Percentile = 'p50' | 'p95';
type PhaseQuantity = `phase_${Phase}_${Percentile}`;
type HandshakeQuantity = `handshake_${'full' | 'resumed'}_${Percentile}`;
export type HeaderBytesKind = 'h1' | 'h2_first' | 'h2_repeat';
type HeaderBytesQuantity = `header_bytes_${HeaderBytesKind}_${'request' | 'response'}`;
type EncodedBytesQuantity = `encoded_bytes_${AcceptEncoding}`;
export type QuantityId =
  | 'new_connection_cost'
  | PhaseQuantity
  | HandshakeQuantity
  | HeaderBytesQuantity
  | EncodedBytesQuantity
  | 'connections_per_request'
  | 'error_rate'
  | 'load_throughput'
  | 'load_latency_p50'
  | 'load_latency_p99';

const time = (label: string): QuantitySpec => ({ label, unit: 'ms', better: 'lower' });
const bytes = (label: string): QuantitySpec => ({ label, unit: 'bytes', better: 'lower' });
const PERCENTILES: Percentile[] = ['p50', 'p95'];
const HEADER_BYTES_LABEL: Record<HeaderBytesKind, string> = {
  h1: 'HTTP/1.1',
  h2_first: 'HTTP/2 first',
  h2_repeat: 'HTTP/2 repeat',
};

/** Every quantity a comparison can hold: the metric label `quantity` takes these ids. */
export const QUANTITIES = {
  new_connection_cost: { label: 'new-connection cost', unit: 'ms', better: 'side-that-moved' },
  ...Object.fromEntries(
    PHASES.flatMap((phase) => PERCENTILES.map((p) => [`phase_${phase}_${p}`, time(`${phase} ${p}`)])),
  ),
  ...Object.fromEntries(
    (['full', 'resumed'] as const).flatMap((kind) =>
      PERCENTILES.map((p) => [`handshake_${kind}_${p}`, time(`handshake ${kind} ${p}`)]),
    ),
  ),
  ...Object.fromEntries(
    (Object.keys(HEADER_BYTES_LABEL) as HeaderBytesKind[]).flatMap((kind) =>
      (['request', 'response'] as const).map((message) => [
        `header_bytes_${kind}_${message}`,
        bytes(`${HEADER_BYTES_LABEL[kind]} ${message} header bytes`),
      ]),
    ),
  ),
  ...Object.fromEntries(
    ACCEPT_ENCODINGS.map((encoding) => [`encoded_bytes_${encoding}`, bytes(`body bytes, Accept-Encoding ${encoding}`)]),
  ),
  connections_per_request: { label: 'connections per request', unit: 'share', better: 'lower' },
  error_rate: { label: 'error rate', unit: 'share', better: 'lower' },
  load_throughput: { label: 'throughput', unit: 'per_second', better: 'higher' },
  load_latency_p50: time('latency p50'),
  load_latency_p99: time('latency p99'),
} as Record<QuantityId, QuantitySpec>;
export const QUANTITY_IDS = Object.keys(QUANTITIES) as [QuantityId, ...QuantityId[]];
