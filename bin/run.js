#!/usr/bin/env node
// oclif checks the Node version against its own engines on every start, loading semver for it
// (about 20 ms of a 300 ms --help); package.json's engines already names the Node leads needs.
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= 'true'
const {execute} = await import('@oclif/core')

await execute({dir: import.meta.url})
