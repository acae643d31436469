// A JSON document whose top-level object holds one big array (a run JSON's `results`), read a
// chunk at a time: the elements of that array come out one by one as their own text, and the rest
// of the document as one text with the array left empty (`[]`). Neither the file nor the array is
// ever one string: a million results are more text than a string may hold. The scanner only finds
// where values begin and end (strings, nesting, commas); JSON.parse checks every piece it hands
// out, so what is not JSON fails there, with the element it is in.

/** What ends a run of string characters, and what begins or ends a value outside strings. */
const STRING_STOP = /["\\]/g;
const STRUCTURAL = /["{}[\],:]/g;

/** A document the scanner cannot take apart: the message says where. */
export class JsonMembersError extends Error {
  override name = 'JsonMembersError';
}

/** A piece of the document: an element of the array, or (last) the rest of the document. */
export type JsonMember = { element: string } | { rest: string };

/**
 * Reads `chunks` (text, in order) of a document `{ ..., "<arrayKey>": [ ... ], ... }`; yields the
 * text of each element of that array, in order, as it is read, and last the rest of the document's
 * text with the array empty. The array's key is found at the top level only.
 */
export async function* topLevelArrayMembers(
  chunks: AsyncIterable<string>,
  arrayKey: string,
): AsyncGenerator<JsonMember> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  const outside: string[] = [];
  /** A top-level string (a key, or a value) being read: its text in earlier chunks, and where it
   * goes on in this one; and the last one read, quotes and all. */
  let topString: string | undefined;
  let topStringFrom = 0;
  let lastTopString = '';
  let key = '';
  let arrayFound = false;
  /** Inside the array: the element being read (its text so far), and whether one came before. */
  let inArray = false;
  let current = '';
  let elements = 0;

  for await (const chunk of chunks) {
    // Text outside the array is kept from `outsideFrom`; an element's from `elementFrom`.
    let outsideFrom = inArray ? -1 : 0;
    let elementFrom = inArray ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      if (inString) {
        if (escaped) {
          escaped = false;
          continue;
        }
        // Straight to the string's next quote or backslash.
        STRING_STOP.lastIndex = i;
        if (!STRING_STOP.test(chunk)) break;
        i = STRING_STOP.lastIndex - 1;
        if (chunk.charCodeAt(i) === 0x5c /* \ */) escaped = true;
        else {
          inString = false;
          if (topString !== undefined) {
            lastTopString = topString + chunk.slice(topStringFrom, i + 1);
            topString = undefined;
          }
        }
        continue;
      }
      // Straight to the next character that begins or ends something.
      STRUCTURAL.lastIndex = i;
      if (!STRUCTURAL.test(chunk)) break;
      i = STRUCTURAL.lastIndex - 1;
      const c = chunk.charCodeAt(i);
      switch (c) {
        case 0x22: // "
          inString = true;
          if (depth === 1) {
            topString = '';
            topStringFrom = i;
          }
          break;
        case 0x3a: // :
          if (depth === 1) key = parseKey(lastTopString);
          break;
        case 0x7b: // {
        case 0x5b: // [
          depth++;
          if (depth === 2 && c === 0x5b && key === arrayKey) {
            if (arrayFound) throw new JsonMembersError(`"${arrayKey}" is there twice`);
            arrayFound = true;
            inArray = true;
            outside.push(chunk.slice(outsideFrom, i + 1));
            outsideFrom = -1;
            elementFrom = i + 1;
          }
          break;
        case 0x7d: // }
        case 0x5d: // ]
          if (depth === 0) throw new JsonMembersError(`an unmatched "${String.fromCharCode(c)}"`);
          if (inArray && depth === 2) {
            // The array's end: the last element (none when the array is empty).
            current += chunk.slice(elementFrom, i);
            if (current.trim() !== '' || elements > 0) yield { element: current };
            current = '';
            inArray = false;
            elementFrom = -1;
            outsideFrom = i;
          }
          depth--;
          break;
        case 0x2c: // ,
          if (inArray && depth === 2) {
            current += chunk.slice(elementFrom, i);
            elements++;
            yield { element: current };
            current = '';
            elementFrom = i + 1;
          }
          break;
      }
    }
    if (inArray) current += chunk.slice(elementFrom);
    else outside.push(chunk.slice(outsideFrom));
    if (topString !== undefined) topString += chunk.slice(topStringFrom);
    topStringFrom = 0;
  }
  if (depth !== 0 || inString) throw new JsonMembersError('the document ends before its last value does');
  yield { rest: outside.join('') };
}

function parseKey(quoted: string): string {
  try {
    const key: unknown = JSON.parse(quoted);
    return typeof key === 'string' ? key : '';
  } catch {
    return '';
  }
}
