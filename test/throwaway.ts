/**
 * The URL of the throwaway server a scripts/with-*.sh wrapper started, from its variable; without
 * one, an error saying how to get one, so a test that needs the server fails instead of skipping.
 *
 * @example
 * throwawayUrl('PETSTORE_TEST_REDIS_URL', 'runs the Lua script on a Redis server', 'redis', 'redis-server')
 */
export function throwawayUrl(variable: string, why: string, script: string, debianPackage: string): string {
  const url = process.env[variable];
  if (!url) {
    throw new Error(
      `${variable} is not set: this test ${why}. ` +
        `\`make unit\` starts a throwaway one (scripts/with-${script}.sh, which installs Debian's ${debianPackage} ` +
        `when run as root; else \`apt-get install -y ${debianPackage}\`); for a few files: ` +
        `scripts/with-${script}.sh node_modules/.bin/bun test <file>`,
    );
  }
  return url;
}
