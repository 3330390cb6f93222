#!/usr/bin/env node
// `node scripts/results-table.js KIND [FIGURE ...]`: the runs of one kind in bench/results
// (files named KIND-<yyyymmdd>T<hhmmss>Z….json, oldest first) as a Markdown table, one row per run.
// Columns are the run's figures flattened to dotted names (`mariadb.c1_median_ms`); name some to
// keep only those. Files with `cases` (bench/scale.ts) print one table per file, a row per case.
// `node scripts/results-table.js` alone lists the kinds and how many runs each has.
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const RESULTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bench/results')
const NAME = /^(.+?)-(\d{8}T\d{6}Z)(?:-[\w-]+)?\.json$/

const files = fs
  .readdirSync(RESULTS)
  .map((file) => ({file, match: NAME.exec(file)}))
  .filter(({match}) => match)
  .map(({file, match}) => ({file, kind: match[1], stamp: match[2]}))
  .sort((a, b) => a.stamp.localeCompare(b.stamp) || a.file.localeCompare(b.file))

const [kind, ...wanted] = process.argv.slice(2)
if (!kind) {
  const counts = new Map()
  for (const {kind: k} of files) counts.set(k, (counts.get(k) ?? 0) + 1)
  for (const [k, count] of [...counts].sort()) console.log(`${k}\t${count}`)
  process.exit(0)
}
const runs = files.filter((entry) => entry.kind === kind)
if (runs.length === 0) {
  console.error(`no bench/results/${kind}-*.json; run without arguments to list the kinds`)
  process.exit(1)
}

/** Leaves of an object as [dotted name, value]; arrays of numbers are kept whole. */
function flatten(value, prefix = '') {
  if (value === null || typeof value !== 'object' || (Array.isArray(value) && value.every((item) => typeof item !== 'object'))) {
    return [[prefix, Array.isArray(value) ? value.join(' ') : value]]
  }
  return Object.entries(value).flatMap(([key, inner]) => flatten(inner, prefix ? `${prefix}.${key}` : key))
}

const cell = (value) => (value === undefined || value === null ? '' : String(value).replaceAll('|', '\\|'))
const table = (header, rows) => [header, header.map(() => '---'), ...rows].map((row) => `| ${row.map(cell).join(' | ')} |`).join('\n')

const loaded = runs.map(({file}) => ({file, data: JSON.parse(fs.readFileSync(path.join(RESULTS, file), 'utf8'))}))
const withCases = loaded.filter(({data}) => Array.isArray(data.cases))
for (const {file, data} of withCases) {
  const columns = ['median_ms', 'p99_ms', 'floor_median_ms', 'bar']
  console.log(`\n${file} (${data.started_at ?? data.date ?? ''})\n`)
  console.log(
    table(
      ['case', ...columns],
      data.cases.map((one) => [one.name, ...columns.map((column) => one[column])]),
    ),
  )
}

const others = loaded.filter(({data}) => !Array.isArray(data.cases))
if (others.length > 0) {
  const rows = others.map(({file, data}) => ({
    file,
    date: data.date ?? data.started_at ?? '',
    figures: new Map(flatten(data.figures ?? data.summary ?? data.runs ?? {}).filter(([name]) => name !== '')),
  }))
  const names = wanted.length > 0 ? wanted : [...new Set(rows.flatMap((row) => [...row.figures.keys()]))]
  console.log(
    table(
      ['file', 'date', ...names],
      rows.map((row) => [row.file, row.date, ...names.map((name) => row.figures.get(name))]),
    ),
  )
}
