import {Args, Flags} from '@oclif/core'

import {type ApiAnswer, callApi, headerOf, paginate, RATE_LIMIT_HEADERS, rawField, typedField} from '../src/client/api-call.js'
import {requireClientSettings} from '../src/client/client-settings.js'
import {AppError} from '../src/shared/errors.js'
import {terminalSafe, terminalSafeJson} from '../src/ui/terminal-text.js'
import {BaseCommand, clientFlags} from './_shared/base-command.js'

export default class Api extends BaseCommand {
  static override description = `Make an authenticated request to any endpoint of the API, as gh api does

Uses the client settings in force (--base-url, --token, --customer, else LEADS_BASE_URL, LEADS_API_TOKEN and LEADS_CUSTOMER_ID, else the profile). Fields (-f, -F) go into the query string of a GET or DELETE and into a JSON body otherwise, where key[sub]=value sets a key of an object, key[]=value adds to an array and key[][sub]=value builds an array of objects, as gh api reads them; a POST without an Idempotency-Key header gets a fresh one. At a terminal the answer is indented JSON; anywhere else it is printed as the server sent it. --paginate follows next_cursor and prints each page. An answer that is not a 2xx is printed too, and the command exits 1.`
  static override examples = [
    '<%= config.bin %> api GET /api/agents/crm/leads -f limit=5',
    '<%= config.bin %> api GET /api/agents/crm/leads -f sync=true --paginate | jq -c ".leads[]"',
    '<%= config.bin %> api POST /api/agents/crm/leads -f contact_name="Ada Lovelace" -f contact_email=ada@example.org -i',
    '<%= config.bin %> api POST /api/agents/crm/leads -f contact_name=Grace -F "custom_fields[budget]=250000" -f "custom_fields[lead_line]=buyer"',
  ]
  // The answer is JSON already.
  static override enableJsonFlag = false
  static override args = {
    method: Args.string({description: 'HTTP method', required: true, options: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE']}),
    path: Args.string({description: 'path of the endpoint, e.g. /api/agents/crm/leads (a query string may follow)', required: true}),
  }
  static override flags = {
    ...clientFlags,
    'raw-field': Flags.string({char: 'f', description: 'a field key=value, the value as a string (repeat for several)', multiple: true}),
    field: Flags.string({char: 'F', description: 'a field key=value; true, false, null and numbers as JSON values (repeat for several)', multiple: true}),
    header: Flags.string({char: 'H', description: 'an extra header "Name: value" (repeat for several)', multiple: true}),
    paginate: Flags.boolean({description: 'follow next_cursor and print every page'}),
    include: Flags.boolean({char: 'i', description: 'print the status and the RateLimit headers on stderr'}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Api)
    const {baseUrl, apiToken, customerId} = requireClientSettings(this.clientSettings(flags))
    const call = {
      baseUrl,
      token: apiToken,
      customerId,
      method: args.method,
      path: args.path,
      fields: [...(flags['raw-field'] ?? []).map(rawField), ...(flags.field ?? []).map(typedField)],
      headers: (flags.header ?? []).map(headerOf),
    }
    const answers = flags.paginate ? paginate(call) : single(call)
    for await (const answer of answers) {
      if (flags.include) this.showHeaders(answer)
      this.print(answer)
      if (answer.status >= 300) {
        const message = (answer.json as {error?: {message?: string}} | undefined)?.error?.message ?? answer.statusText
        throw new AppError('invalid_request_error', answer.status, `HTTP ${answer.status}: ${message}`)
      }
    }
  }

  /** The body on stdout: indented JSON at a terminal, else as sent; made inert either way. */
  private print(answer: ApiAnswer): void {
    if (answer.text === '') return
    const pretty = process.stdout.isTTY && answer.json !== undefined
    process.stdout.write(`${pretty ? terminalSafeJson(JSON.stringify(answer.json, null, 2)) : answer.text.replace(/\n$/, '')}\n`)
  }

  private showHeaders(answer: ApiAnswer): void {
    const lines = [`HTTP ${answer.status} ${answer.statusText}`]
    for (const name of RATE_LIMIT_HEADERS) {
      const value = answer.headers.get(name)
      if (value !== null) lines.push(`${name}: ${value}`)
    }
    process.stderr.write(`${lines.map((line) => terminalSafe(line)).join('\n')}\n`)
  }
}

async function* single(call: Parameters<typeof callApi>[0]): AsyncGenerator<ApiAnswer> {
  yield await callApi(call)
}
