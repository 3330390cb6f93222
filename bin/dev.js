#!/usr/bin/env node
// Runs the CLI from a fresh build: `npm run build` first, then the same entry as bin/run.js.
import {execute} from '@oclif/core'

await execute({development: true, dir: import.meta.url})
