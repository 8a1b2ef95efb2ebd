// Finds a number in a JSON body that `JSON.parse` rounds to an integer the client did not send,
// so the body's reader (src/api/validate.ts) refuses it rather than store a value never sent.

/** A JSON number literal (RFC 8259 section 6): sign, integer digits, fraction, exponent. */
const NUMBER = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** A literal with an exponent above this is far outside every range the service accepts. */
const MAX_EXPONENT = 400;

/**
 * Returns the name of the first top-level member whose number `JSON.parse` rounds to an integer
 * the client did not send, such as `9007199254740990.9` or `4.0000000000000001`; such a number
 * would pass an integer check and be stored wrong. `text` must be valid JSON.
 *
 * @example
 * roundedMember('{"name":"Rex","categoryId":9007199254740990.9}') // 'categoryId'
 * roundedMember('{"name":"Rex","categoryId":7}') // undefined
 */
export function roundedMember(text: string): string | undefined {
  // Only a fraction or an exponent, or an integer of 16 digits or more, can be rounded.
  if (!/[0-9][.eE]|[0-9]{16}/.test(text)) return undefined;
  let depth = 0;
  let key: string | undefined;
  let afterColon = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') {
      const end = stringEnd(text, i);
      if (depth === 1 && !afterColon) key = text.slice(i, end + 1);
      afterColon = false;
      i = end;
    } else if (ch === '{' || ch === '[') {
      depth++;
      afterColon = false;
    } else if (ch === '}' || ch === ']') {
      depth--;
    } else if (ch === ':') {
      afterColon = depth === 1;
    } else if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) {
      let end = i;
      while (end < text.length && /[-+0-9.eE]/.test(text[end] as string)) end++;
      if (afterColon && key !== undefined && isRounded(text.slice(i, end))) return JSON.parse(key) as string;
      afterColon = false;
      i = end - 1;
    } else if (ch === ',') {
      afterColon = false;
    }
  }
  return undefined;
}

/** Returns the index of the closing quote of the string that starts at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  return text.length;
}

/** Returns whether the literal parses to an integer that is not its exact value. */
function isRounded(literal: string): boolean {
  const parsed = Number(literal);
  if (!Number.isInteger(parsed)) return false;
  const m = NUMBER.exec(literal);
  if (!m) return false;
  const [, whole = '', fraction = '', exponentText = '0'] = m;
  const exponent = Number(exponentText);
  if (Math.abs(exponent) > MAX_EXPONENT) return true;
  // The literal's value is digits x 10^shift.
  const digits = (whole + fraction).replace(/^0+(?=\d)/, '');
  const shift = exponent - fraction.length;
  let integer: string;
  if (shift >= 0) {
    integer = digits + '0'.repeat(shift);
  } else {
    const cut = digits.length + shift;
    if (!/^0*$/.test(digits.slice(Math.max(cut, 0)))) return true; // not a whole number
    integer = cut > 0 ? digits.slice(0, cut) : '0';
  }
  const exact = BigInt(literal.startsWith('-') ? `-${integer}` : integer);
  return exact !== BigInt(parsed);
}
