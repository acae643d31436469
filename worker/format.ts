// Numbers as the probes' findings and recommendations write them.
import { formatMs } from '../common/format-ms.js';

export const fmtBytes = (n: number) => `${Math.round(n).toLocaleString('en-US')} B`;
export const fmtMs = (n: number) => formatMs(n, { groupThousands: false });
export const percent = (part: number, whole: number) => `${((part / whole) * 100).toFixed(1)}%`;
