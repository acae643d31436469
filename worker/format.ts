// Numbers as the probes' findings and recommendations write them.
import { formatMs } from '../common/format-ms.js';
import { thousands } from '../common/plural.js';

export const fmtBytes = (n: number) => `${thousands(Math.round(n))} B`;
export const fmtMs = (n: number) => formatMs(n, { groupThousands: false });
export const percent = (part: number, whole: number) => `${((part / whole) * 100).toFixed(1)}%`;
