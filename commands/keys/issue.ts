import {Flags} from '@oclif/core'

import {SCOPES} from '../../src/keys/scopes.js'
import {parseDuration} from '../../src/shared/duration.js'
import {renderSecretOnce} from '../../src/ui/render.js'
import {BaseCommand, sharedFlags} from '../_shared/base-command.js'
import {type KeyOutput, keyOutput} from '../_shared/key-output.js'

export default class KeysIssue extends BaseCommand {
  static override description = 'Issue an API key locked to one customer; the token is shown once and only its hash is kept'
  static override examples = [
    '<%= config.bin %> keys issue --customer 6f1c... --scope public_api:leads:read --scope public_api:leads:write --name "acme sync"',
    '<%= config.bin %> keys issue --customer 6f1c... --scope public_api:leads:read --expires-in 90d --json',
  ]
  static override flags = {
    customer: sharedFlags.customer,
    scope: Flags.string({description: 'scope to grant (repeat for several)', required: true, multiple: true, options: [...SCOPES]}),
    name: Flags.string({description: 'label to recognise the key by; leave it out for none (an empty one is refused)'}),
    'expires-in': Flags.string({description: 'lifetime such as 90d, 12h or 30m; default: never expires'}),
    internal: Flags.boolean({description: 'exempt the key from rate limits (internal traffic)'}),
  }

  async run(): Promise<KeyOutput & {token: string}> {
    const {flags} = await this.parse(KeysIssue)
    const expiresInMs = flags['expires-in'] === undefined ? undefined : parseDuration(flags['expires-in'], 'expires-in')
    const {key, token} = await this.withServices(['keys'], (services) =>
      services.keys.issue({customerId: flags.customer, scopes: flags.scope, name: flags.name, expiresInMs, internal: flags.internal}),
    )
    const output = keyOutput(key)
    if (!this.jsonEnabled()) {
      await renderSecretOnce(
        {
          title: 'API token',
          secret: token,
          details: [
            ['key id', output.id],
            ['customer', output.customer_id],
            ['scopes', output.scopes.join(', ')],
            ['expires', output.expires_at ?? 'never'],
          ],
        },
        this.interactive,
      )
    }
    return {...output, token}
  }
}
