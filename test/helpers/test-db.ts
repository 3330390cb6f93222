import {createDb, type Db} from '../../src/db/knex.js'
import type {Backend} from './backends.js'

/**
 * A database handle of the test's own on the backend's database (migrated by the root hook), for
 * setting up and checking rows no service method reaches. The test destroys it when done.
 */
export function openTestDb(backend: Backend): Db {
  return createDb(backend.config().database)
}
