// A JSON validator that reads bytes as they arrive and stops at the end of the first top-level
// object or array, as Go's json.Decoder does: the drain probe's `json` mode reads a body this way.
// It builds nothing (memory is the nesting stack, bounded like Go's decoder), so a 16 MB body of
// nested brackets costs one pass over its bytes, not gigabytes of parsed arrays.

/** Go's encoding/json refuses values nested deeper than this. */
export const MAX_JSON_DEPTH = 10_000;

type State =
  | 'before' // whitespace before the top-level value
  | 'value' // a value is expected
  | 'value-or-close' // first value of an array, or `]`
  | 'key-or-close' // first key of an object, or `}`
  | 'key' // a key is expected (after a comma in an object)
  | 'colon'
  | 'after-value' // `,` or the closing bracket of the container
  | 'string'
  | 'escape'
  | 'unicode'
  | 'number'
  | 'literal';

const WHITESPACE = new Set([0x20, 0x0a, 0x0d, 0x09]);
const ESCAPES = new Set([...'"\\/bfnrtu'].map((c) => c.charCodeAt(0)));
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
/** RFC 8259 §6 as a regular expression over the characters a number may hold. */
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const LITERALS = ['true', 'false', 'null'];

/** Feed it chunks; it says where the top-level value ended, or why the body is not JSON. */
export class JsonScanner {
  private state: State = 'before';
  /** Open containers, innermost last: true for an object. */
  private readonly stack: boolean[] = [];
  /** Whether the string being read is an object's key. */
  private inKey = false;
  private unicodeLeft = 0;
  private token = '';
  /** Bytes consumed so far, up to and including the closing bracket once `done`. */
  consumed = 0;
  done = false;
  /** Why the body is not one JSON object or array; set once, then nothing more is read. */
  problem: string | null = null;

  /** Reads `chunk`; returns the index just past the closing bracket when the value ended in it, else -1. */
  feed(chunk: Uint8Array): number {
    for (let i = 0; i < chunk.length && !this.done && this.problem === null; i++) {
      this.step(chunk[i]);
      this.consumed++;
      if (this.done) return i + 1;
    }
    return -1;
  }

  /** Whether the top-level value has begun (its opening bracket was read). */
  get started(): boolean {
    return this.state !== 'before' || this.done;
  }

  private fail(problem: string): void {
    this.problem ??= `${problem} at byte ${this.consumed}`;
  }

  private step(c: number): void {
    switch (this.state) {
      case 'string':
        if (c === 0x22) this.endValue(!this.inKey);
        else if (c === 0x5c) this.state = 'escape';
        else if (c < 0x20) this.fail('a control character inside a string');
        return;
      case 'escape':
        if (!ESCAPES.has(c)) return this.fail('a bad escape in a string');
        if (c === 0x75) {
          this.state = 'unicode';
          this.unicodeLeft = 4;
        } else this.state = 'string';
        return;
      case 'unicode':
        if (!isHex(c)) return this.fail('a bad \\u escape in a string');
        if (--this.unicodeLeft === 0) this.state = 'string';
        return;
      case 'number':
      case 'literal':
        if (this.state === 'number' ? isDigit(c) || '+-.eE'.includes(String.fromCharCode(c)) : c >= 0x61 && c <= 0x7a) {
          this.token += String.fromCharCode(c);
          if (this.token.length > 512) this.fail('a number or word too long');
          return;
        }
        if (this.state === 'number' ? !NUMBER.test(this.token) : !LITERALS.includes(this.token))
          return this.fail(`not a JSON value: ${JSON.stringify(this.token.slice(0, 20))}`);
        this.endValue(true);
        return this.step(c);
    }
    if (WHITESPACE.has(c)) return;
    switch (this.state) {
      case 'before':
        if (c !== 0x7b && c !== 0x5b) return this.fail('not a JSON object or array');
        return this.open(c === 0x7b);
      case 'value':
      case 'value-or-close':
        if (c === 0x5d && this.state === 'value-or-close') return this.close(false);
        return this.startValue(c);
      case 'key-or-close':
      case 'key':
        if (c === 0x7d && this.state === 'key-or-close') return this.close(true);
        if (c !== 0x22) return this.fail('an object key that is not a string');
        this.inKey = true;
        this.state = 'string';
        return;
      case 'colon':
        if (c !== 0x3a) return this.fail('no colon after an object key');
        this.state = 'value';
        return;
      case 'after-value': {
        const inObject = this.stack.at(-1)!;
        if (c === 0x2c) this.state = inObject ? 'key' : 'value';
        else if (c === (inObject ? 0x7d : 0x5d)) this.close(inObject);
        else this.fail(`neither a comma nor the end of the ${inObject ? 'object' : 'array'}`);
      }
    }
  }

  private startValue(c: number): void {
    if (c === 0x7b || c === 0x5b) return this.open(c === 0x7b);
    if (c === 0x22) {
      this.inKey = false;
      this.state = 'string';
    } else if (c === 0x2d || isDigit(c)) {
      this.state = 'number';
      this.token = String.fromCharCode(c);
    } else if (c >= 0x61 && c <= 0x7a) {
      this.state = 'literal';
      this.token = String.fromCharCode(c);
    } else this.fail('not a JSON value');
  }

  private open(isObject: boolean): void {
    if (this.stack.length >= MAX_JSON_DEPTH) return this.fail(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    this.stack.push(isObject);
    this.state = isObject ? 'key-or-close' : 'value-or-close';
  }

  private close(isObject: boolean): void {
    if (this.stack.pop() !== isObject) return this.fail('a closing bracket that does not match');
    if (this.stack.length === 0) this.done = true;
    else this.endValue(true);
  }

  /** A value (or, `isValue` false, a key) ended: what may follow it. */
  private endValue(isValue: boolean): void {
    this.token = '';
    this.state = isValue ? 'after-value' : 'colon';
  }
}
