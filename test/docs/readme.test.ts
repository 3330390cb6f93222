import fs from 'node:fs'
import path from 'node:path'

import {expect} from 'chai'

import {loadConfig} from '../../src/config/config.js'
import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {PROJECT_ROOT} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const README = fs.readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8')

/** The text of the README section under `## title`, up to the next `## ` heading. */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`)
  expect(start, `README section "${title}"`).to.be.greaterThan(-1)
  const end = README.indexOf('\n## ', start + 1)
  return README.slice(start, end === -1 ? undefined : end)
}

/** The fenced code blocks of a piece of Markdown, in order. */
const codeBlocks = (markdown: string) => [...markdown.matchAll(/^```\w*\n([\s\S]*?)^```$/gm)].map((match) => match[1]!)

describe('the README', function () {
  it("lists exactly src/'s areas in its architecture table", function () {
    const listed = [...section('Architecture').matchAll(/^\| `src\/([\w-]+)\/` \|/gm)].map((match) => match[1]!).sort()
    const areas = fs
      .readdirSync(path.join(PROJECT_ROOT, 'src'), {withFileTypes: true})
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort()
    expect(listed).to.deep.equal(areas)
  })

  it('gives the quick start as two commands that package.json runs: build and start the daemon, and the tests', function () {
    const scripts = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {scripts: Record<string, string>}).scripts
    expect(codeBlocks(section('Quick start')).slice(0, 2)).to.deep.equal(['npm install && npm start\n', 'npm test\n'])
    expect(scripts['prestart']).to.equal('npm run build')
    expect(scripts['start']).to.equal('node bin/run.js daemon')
    expect(scripts['test']).to.match(/\bmocha\b/)
  })

  it('states the defaults the daemon starts with when nothing is set', function () {
    const config = loadConfig({}, '/srv/leads')
    expect(README).to.include('listening on `http://127.0.0.1:8080`')
    expect(`http://${config.host}:${config.port}`).to.equal('http://127.0.0.1:8080')
    expect(README).to.include('a SQLite file under\n`./.leads/`')
    expect(config.database).to.include({client: 'sqlite', filename: '/srv/leads/.leads/leads.db'})
  })

  it('names every command that asks before it destroys or resends (those with --yes) where it says which ones ask', function () {
    const manifest = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, {flags: Record<string, unknown>}>
    }
    const asking = Object.entries(manifest.commands)
      .filter(([, command]) => 'yes' in command.flags)
      .map(([id]) => id.replace(/:/g, ' '))
      .sort()
    const sentence = /Commands that destroy or resend \(([^)]*)\) ask at a terminal/.exec(README.replace(/\s+/g, ' '))
    expect(sentence, 'the sentence on commands that ask').to.not.equal(null)
    const named = [...sentence![1]!.matchAll(/`([a-z-]+ [a-z-]+)[^`]*`/g)].map((match) => match[1]!)
    expect([...new Set(named)].sort()).to.deep.equal(asking)
  })

  describe('search example', function () {
    it('is in the README as the test below checks it', function () {
      const search = section('Search')
      expect(search).to.include('For a lead named "Follow 1", `search=follow` and `search=fol`\nfind it and `search=ollow` finds nothing.')
    })

    forEachBackend((backend) => {
      let daemon: TestDaemon
      let tenant: TestTenant
      before(async function () {
        daemon = await startTestDaemon(backend)
        tenant = await newTenant(daemon.services)
        for (const name of ['Follow 1', 'Hollow 2', 'Unfollowed 3']) {
          expect((await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: name})).status).to.equal(201)
        }
      })
      after(async function () {
        await daemon?.stop()
      })

      const found = async (term: string) => {
        const response = await daemon.request(`/api/agents/crm/leads?search=${encodeURIComponent(term)}`, {token: tenant.token, customerId: tenant.customer.id})
        expect(response.status).to.equal(200)
        return (response.body.leads as Array<{contact_name: string}>).map((lead) => lead.contact_name).sort()
      }

      it('holds against a running daemon: a word is found by its beginning, never by its middle', async function () {
        expect(await found('follow')).to.deep.equal(['Follow 1'])
        expect(await found('fol')).to.deep.equal(['Follow 1'])
        expect(await found('ollow')).to.deep.equal([])
        expect(await found('FOLLOW')).to.deep.equal(['Follow 1'])
      })
    })
  })
})
