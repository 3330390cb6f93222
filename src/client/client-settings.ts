import fs from 'node:fs'
import path from 'node:path'

import type {Config} from '../config/config.js'
import {AppError, ValidationError} from '../shared/errors.js'
import {withoutCredentials} from '../shared/text.js'
import {UUID_PATTERN} from '../shared/validate.js'

/** What the client commands need to reach the API as one customer. */
export interface ClientSettings {
  baseUrl: string | null
  apiToken: string | null
  customerId: string | null
  /** Where baseUrl came from, so a hint about a wrong URL says what to change. */
  baseUrlFrom?: SettingSource
}

/** Where a setting in force came from: a flag, the environment, or the named profile. */
export type SettingSource = {kind: 'flag'} | {kind: 'env'} | {kind: 'profile'; profile: string}

/** The settings a profile (and `leads config`) keeps, by name. */
export const SETTING_NAMES = ['base-url', 'token', 'customer'] as const
export type SettingName = (typeof SETTING_NAMES)[number]
type Profile = Partial<Record<SettingName, string>>

export const DEFAULT_PROFILE = 'default'

/** Where each setting comes from, for the message when none gives it. */
const SOURCES: Record<SettingName, {flag: string; variable: string; example: string}> = {
  'base-url': {flag: '--base-url', variable: 'LEADS_BASE_URL', example: 'such as http://127.0.0.1:8080'},
  token: {flag: '--token', variable: 'LEADS_API_TOKEN', example: 'such as svc_…'},
  customer: {flag: '--customer', variable: 'LEADS_CUSTOMER_ID', example: 'the customer UUID the token is locked to'},
}

/**
 * The client settings in force: a flag beats the environment, which beats the profile. Each value
 * is checked, wherever it came from.
 */
export function resolveClientSettings(flags: Profile, env: Config['client'], profile: Profile, profileName = DEFAULT_PROFILE): ClientSettings {
  const pick = (name: SettingName, fromEnv: string | null) => {
    const value = flags[name] ?? fromEnv ?? profile[name] ?? null
    return value === null ? null : checkSetting(name, value)
  }
  const baseUrlFrom: SettingSource =
    flags['base-url'] !== undefined ? {kind: 'flag'} : env.baseUrl !== null ? {kind: 'env'} : {kind: 'profile', profile: profileName}
  return {baseUrl: pick('base-url', env.baseUrl), apiToken: pick('token', env.apiToken), customerId: pick('customer', env.customerId), baseUrlFrom}
}

/** How to change the base URL where it came from, for the hint when nothing answers there. */
export function baseUrlFix(source: SettingSource | undefined): string {
  const {flag, variable} = SOURCES['base-url']
  if (source?.kind === 'flag') return `correct ${flag}`
  if (source?.kind === 'profile') return `correct profile ${source.profile}: leads config set base-url … --profile ${source.profile}`
  return `set ${variable}`
}

/** The settings the API client needs, each present; one line naming the three ways to give a missing one. */
export function requireClientSettings(settings: ClientSettings): {baseUrl: string; apiToken: string; customerId: string; baseUrlFrom?: SettingSource} {
  const missing = (name: SettingName) => {
    const {flag, variable, example} = SOURCES[name]
    return new AppError(
      'invalid_request_error',
      400,
      `no ${name === 'base-url' ? 'API base URL' : name === 'token' ? 'API token' : 'customer id'} given (${example})`,
      `pass ${flag}, set ${variable}, or keep it in a profile: leads config set ${name} …`,
    )
  }
  if (settings.baseUrl === null) throw missing('base-url')
  if (settings.apiToken === null) throw missing('token')
  if (settings.customerId === null) throw missing('customer')
  return {baseUrl: settings.baseUrl, apiToken: settings.apiToken, customerId: settings.customerId, baseUrlFrom: settings.baseUrlFrom}
}

/** A setting's value checked (a URL, a token, a UUID); throws ValidationError naming it. */
export function checkSetting(name: SettingName, raw: string): string {
  const value = raw.trim()
  if (name === 'base-url') {
    let url: URL | null = null
    try {
      url = new URL(value)
    } catch {
      // reported below
    }
    // fetch refuses them anyway, and each error would print the password.
    if (url && (url.username !== '' || url.password !== ''))
      throw new ValidationError('base-url must not hold a user or password (the API token authenticates)', name)
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new ValidationError(`base-url must be an http(s) URL, got "${withoutCredentials(value)}"`, name)
    // One spelling per API (URL's: scheme and host lower-cased, no default port), so a pull
    // state keyed by it is found whichever way the URL was typed.
    return url.href.replace(/\/+$/, '')
  }
  if (name === 'token') {
    if (!/^svc_[0-9a-f]{64}$/.test(value)) throw new ValidationError('token must be svc_ followed by 64 hex characters, as the operator issued it', name)
    return value
  }
  if (!UUID_PATTERN.test(value)) {
    throw new ValidationError(`customer must be a UUID, got "${value}"`, name, 'the id of the customer the token was issued for, as the operator gave it')
  }
  return value.toLowerCase()
}

/** How a setting is shown: a token only by its first and last characters, so it never reaches a screen or a log. */
export function shownSetting(name: SettingName, value: string): string {
  return name === 'token' ? `${value.slice(0, 4)}…${value.slice(-4)}` : value
}

/**
 * Named profiles of client settings in one JSON file in the CLI's config directory, readable by
 * its owner only (0600, the directory 0700): it holds API tokens. Beside it, `current-profile`
 * names the profile `leads config use` chose.
 */
export class ProfileStore {
  private readonly file: string
  private readonly currentFile: string

  private constructor(directory: string) {
    this.file = path.join(directory, 'profiles.json')
    this.currentFile = path.join(directory, 'current-profile')
  }

  static in(configDir: string): ProfileStore {
    return new ProfileStore(configDir)
  }

  all(): Record<string, Profile> {
    const text = readIfThere(this.file)
    if (text === null) return {}
    try {
      return JSON.parse(text) as Record<string, Profile>
    } catch {
      throw new AppError('invalid_request_error', 400, `${this.file} is not valid JSON`, 'fix or delete the file; `leads config set` writes it again')
    }
  }

  /** A profile's settings; an unknown profile is an error unless it is the default (which may be empty). */
  get(name: string): Profile {
    const profile = this.all()[name]
    if (profile === undefined && name !== DEFAULT_PROFILE) {
      throw new ValidationError(
        `no profile "${name}"; profiles: ${Object.keys(this.all()).join(', ') || 'none yet'}`,
        'profile',
        'create it with `leads config set NAME VALUE --profile …`',
      )
    }
    return profile ?? {}
  }

  /** The profile in force: --profile, else LEADS_PROFILE, else the one `leads config use` chose, else default. */
  inForce(flag: string | undefined, fromEnv: string | null): string {
    return flag ?? fromEnv ?? this.current() ?? DEFAULT_PROFILE
  }

  /** The profile `leads config use` chose, if any. */
  current(): string | null {
    return readIfThere(this.currentFile)?.trim() || null
  }

  /** Makes `name` (an existing profile, or the default) the one used when neither --profile nor LEADS_PROFILE names one. */
  use(name: string): void {
    this.get(name)
    if (name === DEFAULT_PROFILE) fs.rmSync(this.currentFile, {force: true})
    else this.writePrivately(this.currentFile, `${name}\n`)
  }

  set(name: string, setting: SettingName, value: string): void {
    const all = this.all()
    all[name] = {...all[name], [setting]: checkSetting(setting, value)}
    this.writePrivately(this.file, `${JSON.stringify(all, null, 2)}\n`)
  }

  /** Removes a setting from a profile; false when it was not set. */
  unset(name: string, setting: SettingName): boolean {
    const all = this.all()
    const profile = this.get(name)
    if (profile[setting] === undefined) return false
    const {[setting]: _removed, ...rest} = profile
    all[name] = rest
    this.writePrivately(this.file, `${JSON.stringify(all, null, 2)}\n`)
    return true
  }

  private writePrivately(file: string, text: string): void {
    fs.mkdirSync(path.dirname(file), {recursive: true, mode: 0o700})
    // Written beside and renamed over, so a crash never leaves half a file; 0600 from the start.
    const next = `${file}.${process.pid}.tmp`
    fs.writeFileSync(next, text, {mode: 0o600})
    fs.renameSync(next, file)
    fs.chmodSync(file, 0o600)
  }
}

function readIfThere(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}
