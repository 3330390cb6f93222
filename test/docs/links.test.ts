import fs from 'node:fs'
import path from 'node:path'

import {expect} from 'chai'

import {PROJECT_ROOT} from '../helpers/cli.js'

/** The README and the documents in docs/, as paths from the project root. */
const DOCUMENTS = ['README.md', ...fs.readdirSync(path.join(PROJECT_ROOT, 'docs')).flatMap((name) => (name.endsWith('.md') ? [`docs/${name}`] : []))]

const read = (file: string) => fs.readFileSync(path.join(PROJECT_ROOT, file), 'utf8')
const withoutCode = (markdown: string) => markdown.replace(/^```[\s\S]*?^```$/gm, '')

/** The anchor GitHub gives a heading: lower case, punctuation but hyphens dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replaceAll(' ', '-')

const anchorsOf = (file: string) => new Set([...withoutCode(read(file)).matchAll(/^#+ (.*)$/gm)].map((match) => anchorOf(match[1]!)))

describe('links between the documents', function () {
  it('point at files and headings that exist', function () {
    const broken: string[] = []
    for (const file of DOCUMENTS) {
      for (const [, target] of withoutCode(read(file)).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue
        const [where, anchor] = target!.split('#') as [string, string | undefined]
        const linked = where === '' ? file : path.normalize(path.join(path.dirname(file), where))
        if (!fs.existsSync(path.join(PROJECT_ROOT, linked))) broken.push(`${file}: ${target} (no such file)`)
        else if (anchor !== undefined && linked.endsWith('.md') && !anchorsOf(linked).has(anchor)) broken.push(`${file}: ${target} (no such heading)`)
      }
    }
    expect(broken).to.deep.equal([])
  })
})
