import {Command, Errors, Flags} from '@oclif/core'

import type {ApiWait} from '../../src/client/api-client.js'
import {type ClientSettings, DEFAULT_PROFILE, ProfileStore, resolveClientSettings} from '../../src/client/client-settings.js'
import {loadConfig} from '../../src/config/config.js'
import {locateOperatorDatabase, requireKeptMasterKey} from '../../src/config/database-location.js'
import {safeMessage} from '../../src/log/safe-error.js'
import type {OperatorServices} from '../../src/service-parts.js'
import type {TableDisplay} from '../../src/ui/render.js'
import {turnColorOffWhenAsked} from '../../src/ui/colors.js'
import {terminalSafe, terminalSafeJson} from '../../src/ui/terminal-text.js'
import {AppError} from '../../src/shared/errors.js'
import {withoutSecrets} from '../../src/shared/secret-text.js'
import {UUID_PATTERN} from '../../src/shared/validate.js'
import {nearest} from './not-found.js'

/**
 * Base of every `leads` command: `--json` (oclif prints the value run() returns), a services
 * helper that opens and always closes the stores, and the one catch() that turns errors into
 * a single line with a hint on stderr and exit code 1 (usage errors keep oclif's exit 2).
 */
export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true
  static override baseFlags = {
    // A flag of its own rather than --[no-]color: `stages add --color` is a stage's colour.
    'no-color': Flags.boolean({description: 'no colour in the output (as NO_COLOR set to anything)', helpGroup: 'GLOBAL'}),
  }

  override async init(): Promise<void> {
    turnColorOffWhenAsked(process.env, this.argv)
    await super.init()
  }

  /**
   * Runs `work` with the services it names, built from the environment and closed afterwards, on
   * the database the daemon uses: found, never created (locateOperatorDatabase). Only what is
   * named is built (and its modules loaded), and Redis is connected only for commands that read
   * it, so the others start fast and work while it is down.
   */
  protected async withServices<K extends keyof OperatorServices, T>(
    needs: readonly K[],
    work: (services: Pick<OperatorServices, K>) => Promise<T>,
    options: {redis?: boolean} = {},
  ): Promise<T> {
    const config = locateOperatorDatabase(loadConfig(process.env), process.cwd())
    requireKeptMasterKey(config)
    // Loaded here, not at the top: the stores, drivers and Redis client are most of a command's
    // start-up, and --help, usage errors and the client commands need none of them.
    const {withOperatorServices} = await import('../../src/operator-services.js')
    try {
      return await withOperatorServices(config, needs, {redis: options.redis ?? false}, work)
    } catch (error) {
      // A database nobody migrated fails on its first statement; say so, not what the driver said.
      const {missingTableError} = await import('../../src/db/database-errors.js')
      throw missingTableError(error) ?? error
    }
  }

  /** True when output should be a live Ink view rather than plain text. */
  protected get interactive(): boolean {
    return !this.jsonEnabled() && Boolean(process.stdout.isTTY)
  }

  /**
   * Asks before a destructive change: passes with --yes; on a terminal asks `question` and goes on
   * only on "y" or "yes"; anywhere else (a script, CI) refuses, as gh does, so nothing is
   * destroyed by a command nobody saw.
   */
  protected async confirm(question: string, yes: boolean, hint = 'add --yes to confirm'): Promise<void> {
    if (yes) return
    if (!process.stdin.isTTY || !process.stderr.isTTY) {
      throw new AppError('invalid_request_error', 400, 'refusing to go on without confirmation: not at a terminal', hint)
    }
    const {createInterface} = await import('node:readline/promises')
    const prompt = createInterface({input: process.stdin, output: process.stderr})
    try {
      const answer = (await prompt.question(`${question} [y/N] `)).trim().toLowerCase()
      if (answer !== 'y' && answer !== 'yes') throw new AppError('invalid_request_error', 400, 'cancelled; nothing was changed')
    } finally {
      prompt.close()
    }
  }

  /** The client settings in force for a client command: its flags, then the environment, then its profile. */
  protected clientSettings(flags: {'base-url'?: string; token?: string; customer?: string; profile?: string}): ClientSettings {
    const store = ProfileStore.in(this.config.configDir)
    const env = loadConfig(process.env).client
    const profileName = store.inForce(flags.profile, env.profile)
    return resolveClientSettings({'base-url': flags['base-url'], token: flags.token, customer: flags.customer}, env, store.get(profileName), profileName)
  }

  /** The profile a `leads config` command is about: --profile, else LEADS_PROFILE, else the current one, else default. */
  protected profileInForce(flag: string | undefined): string {
    return ProfileStore.in(this.config.configDir).inForce(flag, loadConfig(process.env).client.profile)
  }

  /** How a listing command shows its table, from tableFlags. */
  protected tableDisplay(flags: {columns?: string[]; truncate: boolean}): TableDisplay {
    return {interactive: this.interactive, columns: flags.columns, truncate: flags.truncate}
  }

  /**
   * Whether a failure is printed as the JSON error envelope: under --json. A command that streams
   * JSON lines of its own (enableJsonFlag off, a --json flag of its own) says so here too.
   */
  protected failsAsJson(): boolean {
    return this.jsonEnabled()
  }

  protected override async catch(error: Error & {exitCode?: number; oclif?: {exit?: number}}): Promise<void> {
    if ((error as {code?: string}).code === 'EEXIT') throw error
    const usage = error instanceof Errors.CLIError && error.oclif?.exit === 2
    const mistyped = usage ? this.mistypedFlag(error) : null
    // With --json, every failure is the API's error envelope on stderr, usage errors too (as the Stripe CLI does).
    if (this.failsAsJson()) {
      this.writeJsonError(mistyped ? {type: 'invalid_request_error', code: 400, ...mistyped} : errorEnvelope(error, usage), usage ? 2 : 1)
      return
    }
    // One line, as for a mistyped command, rather than oclif's message followed by the whole help.
    if (mistyped) this.error(`${mistyped.message} (${mistyped.hint})`, {exit: 2})
    if (usage) throw error
    process.exitCode = 1
    const hint = error instanceof AppError && error.hint ? ` (hint: ${error.hint})` : ''
    const message = error instanceof AppError ? error.message : `unexpected failure: ${safeMessage(error)}`
    // A message can quote what a server or a file said, or a secret typed in the wrong place.
    process.stderr.write(`Error: ${terminalSafe(withoutSecrets(message + hint))}\n`)
  }

  /**
   * A failure under --json: the error envelope on stderr, and the exit code. For a command whose
   * output on stdout is still its result (`webhooks test` of a receiver that refused), too.
   */
  protected writeJsonError(envelope: ReturnType<typeof errorEnvelope>, exitCode: number): void {
    process.exitCode = exitCode
    process.stderr.write(`${terminalSafeJson(withoutSecrets(JSON.stringify({error: envelope, exit_code: exitCode})))}\n`)
  }

  /** An unknown flag, named with the nearest flag of this command when it is near enough to be a typo of it. */
  private mistypedFlag(error: Error): {message: string; hint: string} | null {
    const typed = (error as {flags?: unknown}).flags
    if (!Array.isArray(typed) || !error.message.startsWith('Nonexistent flag')) return null
    const known = Object.keys({...this.ctor.baseFlags, ...this.ctor.flags})
    const name = typed.length === 1 ? String(typed[0]).split('=')[0]!.replace(/^-+/, '') : null
    const closest = name === null ? null : nearest(name, known)
    const id = this.id?.replaceAll(':', ' ') ?? ''
    return {
      message: `${error.message.split('\n')[0]!.trim()}${closest === null ? '' : `. Did you mean --${closest}?`}`,
      hint: `see ${this.config.bin} ${id} --help`,
    }
  }

  /** --json output, with the characters a terminal would act on escaped (still the same JSON). */
  override logJson(json: unknown): void {
    process.stdout.write(`${terminalSafeJson(JSON.stringify(json, null, 2))}\n`)
  }
}

/** A failure as the API's error envelope (type, code, message, param), with the CLI's hint when there is one. */
function errorEnvelope(error: Error, usage: boolean): {type: string; code: number; message: string; param?: string; hint?: string} {
  if (error instanceof AppError) {
    const param = (error as {param?: string}).param
    return {type: error.type, code: error.status, message: error.message, ...(param ? {param} : {}), ...(error.hint ? {hint: error.hint} : {})}
  }
  // oclif's usage messages may carry colour and its own line breaks.
  const message = error.message
    .replace(/\u001b\[[0-9;]*m/g, '')
    .replace(/See more help with --help/, '')
    .replace(/\s*\n\s*/g, ' ')
    .trim()
  if (usage) return {type: 'invalid_request_error', code: 400, message, hint: 'see --help'}
  return {type: 'api_error', code: 500, message: `unexpected failure: ${safeMessage(error)}`}
}

/**
 * A flag naming a customer or key by its UUID. Ids are stored in lower case and compared byte for
 * byte, so one given in capitals (as the API takes x-customer-id) is lower-cased here, else a
 * listing would find nothing and an override would be kept under an id no key has. Anything
 * that is not a UUID is passed on as given, for the service to refuse with its own message.
 */
export const uuidFlag = Flags.custom<string>({parse: async (input) => (UUID_PATTERN.test(input) ? input.toLowerCase() : input)})

/** Flags several commands share, declared once. */
export const sharedFlags = {
  customer: uuidFlag({description: 'customer id (UUID)', required: true}),
}

/** --yes, on every command that destroys or resends something. */
export const confirmFlags = {
  yes: Flags.boolean({char: 'y', description: 'do it without asking (required when not at a terminal)'}),
}

const PROFILE_DESCRIPTION = `settings profile kept by \`leads config set\` (else LEADS_PROFILE, else the one \`leads config use\` chose, else ${DEFAULT_PROFILE})`

/** Where the client commands reach the API; each beats its environment variable, which beats the profile. */
export const clientFlags = {
  'base-url': Flags.string({description: 'the API, e.g. http://127.0.0.1:8080 (else LEADS_BASE_URL, else the profile)', helpGroup: 'CONNECTION'}),
  token: Flags.string({
    description: 'API token (else LEADS_API_TOKEN, else the profile); a flag shows in the process list, prefer those',
    helpGroup: 'CONNECTION',
  }),
  customer: Flags.string({description: 'customer id the token is locked to (else LEADS_CUSTOMER_ID, else the profile)', helpGroup: 'CONNECTION'}),
  profile: Flags.string({description: PROFILE_DESCRIPTION, helpGroup: 'CONNECTION'}),
}

/** --profile of the `leads config` commands. */
export const profileFlags = {
  profile: Flags.string({description: PROFILE_DESCRIPTION}),
}

/** The flags of every command that prints a table. */
export const tableFlags = {
  columns: Flags.string({description: 'only these columns, in this order (comma-separated, e.g. id,name,state)', multiple: true, delimiter: ','}),
  truncate: Flags.boolean({description: 'cut free text to the terminal width; --no-truncate shows every value whole', allowNo: true, default: true}),
}

/** Without a live view (stderr is not a terminal), each wait of the API client is one line on stderr. */
export function announceWait(wait: ApiWait): void {
  const seconds = Math.ceil(wait.waitMs / 1000)
  process.stderr.write(wait.reason === 'rate limited' ? `rate limited; resuming in ${seconds}s\n` : `${wait.cause}; retrying in ${seconds}s\n`)
}
