import {fileURLToPath} from 'node:url'

import Mocha from 'mocha'

import {mochaHooks} from './root-hooks.js'

/**
 * The sharding check of a parallel run (.mocharc.cjs): run here, in mocha's main process, once
 * every test file has ended in its worker, so that it reads the statements of them all. Its
 * failure fails the run.
 */
export async function mochaGlobalTeardown(): Promise<void> {
  const mocha = new Mocha({reporter: 'spec', timeout: 20_000, rootHooks: mochaHooks})
  mocha.addFile(fileURLToPath(new URL('../src/db/shard-key.check.js', import.meta.url)))
  await mocha.loadFilesAsync()
  const failures = await new Promise<number>((resolve) => mocha.run(resolve))
  if (failures > 0) throw new Error('the sharding check failed (above)')
}
