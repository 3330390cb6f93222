import type {Config} from '../config/config.js'
import {ConfigError} from '../shared/errors.js'
import {UUID_PATTERN} from '../shared/validate.js'
import {type ClientOptions, LeadsApiClient} from './api-client.js'

/** The API client of the client commands, from LEADS_BASE_URL, LEADS_API_TOKEN and LEADS_CUSTOMER_ID. */
export function clientFromConfig(config: Config, extra: Partial<ClientOptions> = {}): LeadsApiClient {
  const {baseUrl, apiToken, customerId} = config.client
  if (baseUrl === null) throw new ConfigError('LEADS_BASE_URL', 'is not set; export the daemon URL, e.g. http://127.0.0.1:8080')
  if (apiToken === null) throw new ConfigError('LEADS_API_TOKEN', 'is not set; export the svc_ token the operator issued')
  if (customerId === null) throw new ConfigError('LEADS_CUSTOMER_ID', 'is not set; export the customer UUID the token is locked to')
  if (!UUID_PATTERN.test(customerId)) throw new ConfigError('LEADS_CUSTOMER_ID', 'must be a UUID')
  return new LeadsApiClient({baseUrl, token: apiToken, customerId, ...extra})
}
