// Formats the origin of a host and port for the `listening` log line, the development key's
// notice and the healthcheck.

/**
 * Returns `http://host:port`, with an IPv6 literal host in brackets (RFC 3986, section 3.2.2) so
 * its colons are not confused with the port's.
 *
 * @example
 * httpOrigin('::', 8080) // 'http://[::]:8080'
 * httpOrigin('127.0.0.1', 8080) // 'http://127.0.0.1:8080'
 */
export function httpOrigin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
