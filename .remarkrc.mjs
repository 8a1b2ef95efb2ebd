// `make lint`'s link check: every relative link and #anchor in the Markdown files resolves to a
// file and a heading of this repository, offline. Links to the repository's own GitHub URL
// (package.json's `repository`, as the alerts' runbook_url use) are checked as local files.
import { readFileSync } from 'node:fs';
import remarkValidateLinks from 'remark-validate-links';

const { repository } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

export default {
  plugins: [[remarkValidateLinks, { repository: repository.url, root: import.meta.dirname }]],
};
