// One configuration for both runs. The MySQL run (LEADS_TEST_MYSQL_URL set, as .ci/run does) runs
// the test files one at a time, as they share one database and one Redis database, and ends with
// the sharding check. The SQLite run runs them in parallel processes, each on a SQLite file of its
// own, and the sharding check once they have all ended (test/helpers/shard-check-at-end.ts).
const fs = require('node:fs')
const path = require('node:path')

const mysqlRun = Boolean(process.env.LEADS_TEST_MYSQL_URL)

// The tests' scratch files (SQLite stores, daemons' directories, CLI profiles) go to memory where
// the machine has it, unless TMPDIR names a place: the embedded store syncs its WAL to disk at
// commits, checkpoints and closes, and on a disk those waits lengthen the whole run. The daemon's
// durability is the same on either; no test can tell a synced page from one in the page cache.
// Set before the workers start, so they and every process they start inherit it.
if (!process.env.TMPDIR && isWritableDirectory('/dev/shm')) process.env.TMPDIR = '/dev/shm'

function isWritableDirectory(dir) {
  try {
    fs.accessSync(dir, fs.constants.W_OK)
    return fs.statSync(dir).isDirectory()
  } catch {
    return false
  }
}

/**
 * The SQLite run's long files, handed out first: mocha starts the files in the order given, and
 * one of these started last would end the run alone. Not strictly by length: this order ran the
 * whole suite sooner than one sorted by each file's time, in runs taking turns with it.
 */
const LONGEST_FIRST = [
  'daemon/delivery-scheduling',
  'daemon/worker-crash',
  'commands/client-settings',
  'commands/operator-commands',
  'commands/readme-session',
  'commands/table-widths',
  'daemon/process',
  'commands/pull',
].map((name) => `dist/test/${name}.test.js`)

/** Every test file under dist/test but the topology run's, the longest first, then in name order. */
function parallelRunFiles() {
  const all = fs.existsSync('dist/test')
    ? fs
        .readdirSync('dist/test', {recursive: true})
        .map((file) => path.join('dist/test', file))
        .filter((file) => file.endsWith('.test.js') && !file.startsWith('dist/test/topology/'))
        .sort()
    : []
  return [...LONGEST_FIRST.filter((file) => all.includes(file)), ...all.filter((file) => !LONGEST_FIRST.includes(file))]
}

module.exports = {
  spec: mysqlRun ? ['dist/test/**/*.test.js', 'dist/test/src/db/shard-key.check.js'] : parallelRunFiles(),
  ignore: ['dist/test/topology/**'],
  require: mysqlRun ? ['dist/test/helpers/root-hooks.js'] : ['dist/test/helpers/root-hooks.js', 'dist/test/helpers/shard-check-at-end.js'],
  timeout: 20000,
  reporter: 'spec',
  exit: true,
  parallel: !mysqlRun,
  // Most files spend much of their time waiting on timers, sockets and child processes: three at
  // a time keep two cores busy; four were no faster within this machine's run-to-run swings.
  jobs: 3,
}
