/**
 * A connection URL as it may be logged: its password replaced by `***`.
 *
 * @example
 * redactUrl('redis://:secret@cache:6379/0') // 'redis://:***@cache:6379/0'
 * redactUrl('postgres://app:secret@db:5432/pets') // 'postgres://app:***@db:5432/pets'
 */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(raw)?.[0] ?? '';
    return `${scheme}(unparsable URL)`;
  }
}
