// Numbers as the probes' findings and recommendations write them.
export const fmtBytes = (n: number) => `${Math.round(n).toLocaleString('en-US')} B`;
export const fmtMs = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} ms`;
export const percent = (part: number, whole: number) => `${((part / whole) * 100).toFixed(1)}%`;
