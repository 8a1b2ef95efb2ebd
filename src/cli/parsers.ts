// The parsers option tables use for raw values. Every error reads `SOURCE: expected WHAT, got
// "VALUE"`, where SOURCE is the flag or environment variable the value came from.
import * as v from 'valibot';
import { ConfigError, type Parser } from './options.ts';

/**
 * A parser from a valibot schema. Any issue throws `ConfigError` as `SOURCE: expected <expected>,
 * got "…"`, quoting the failing item of a list, else the raw value.
 *
 * @example
 * const port = checked('a port number', v.pipe(v.string(), v.digits(), v.transform(Number)))
 */
export function checked<T>(expected: string, schema: v.GenericSchema<string, T>): Parser<T> {
  return (raw, source) => {
    const result = v.safeParse(schema, raw);
    if (result.success) return result.output;
    const input = result.issues[0].input;
    throw new ConfigError(`${source}: expected ${expected}, got "${typeof input === 'string' ? input : raw}"`);
  };
}

/** Words separated by commas or white space. */
export const words = (raw: string): string[] => raw.split(/[\s,]+/).filter(Boolean);

export const text: Parser<string> = (raw) => raw;
/** A switch's value: the bare flag. */
export const on: Parser<boolean> = () => true;

export const wholeNumber = (min: number, max: number) =>
  v.pipe(v.string(), v.digits(), v.transform(Number), v.minValue(min), v.maxValue(max));

export const int = (min: number, max: number): Parser<number> =>
  checked(`a whole number from ${min} to ${max}`, wholeNumber(min, max));

export const oneOf = <T extends string>(values: readonly T[]): Parser<T> =>
  checked(`one of ${values.join(', ')}`, v.pipe(v.string(), v.picklist(values)));

/** A switch: the bare flag turns it on; its env var takes true/false, 1/0, yes/no, on/off. */
export const toggle: Parser<boolean> = checked(
  'true or false',
  v.pipe(
    v.string(),
    v.regex(/^(|1|true|yes|on|0|false|no|off)$/i),
    v.transform((raw) => /^(|1|true|yes|on)$/i.test(raw)),
  ),
);

/** A URL whose scheme is one of `protocols` (`'https:'`), for `v.check`. */
export function urlWith(raw: string, protocols: readonly string[]): URL | undefined {
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  return url && protocols.includes(url.protocol) ? url : undefined;
}
