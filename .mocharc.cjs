// One configuration for both runs. The MySQL run (LEADS_TEST_MYSQL_URL set, as .ci/run does) runs
// the test files one at a time, as they share one database and one Redis database, and ends with
// the sharding check. The SQLite run runs them in parallel processes, each on a SQLite file of its
// own, and the sharding check once they have all ended (test/helpers/shard-check-at-end.ts).
const mysqlRun = Boolean(process.env.LEADS_TEST_MYSQL_URL)

module.exports = {
  spec: mysqlRun ? ['dist/test/**/*.test.js', 'dist/test/src/db/shard-key.check.js'] : ['dist/test/**/*.test.js'],
  ignore: ['dist/test/topology/**'],
  require: mysqlRun ? ['dist/test/helpers/root-hooks.js'] : ['dist/test/helpers/root-hooks.js', 'dist/test/helpers/shard-check-at-end.js'],
  timeout: 20000,
  reporter: 'spec',
  exit: true,
  parallel: !mysqlRun,
  // Most files spend their time waiting on timers, sockets and child processes: three at a time
  // keep two cores busy.
  jobs: 3,
}
