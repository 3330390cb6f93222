import type {IdempotencyDecision} from '../src/idempotency/idempotency-service.js'
import {NO_HOOKS, type StoredResponse, type WriteHooks} from '../src/leads/write-types.js'
import type {Services} from '../src/services.js'
import {AppError} from '../src/shared/errors.js'
import type {AppContext} from './context.js'
import {appErrorEnvelope} from './middleware/errors.js'

/** A write route's answer. */
type WriteResponse = StoredResponse

/** How a route's answers are kept under their key: sealed when they hold a secret, else as sent. */
export interface AnswerSealing {
  seal(body: string): string
  open(stored: string): string
}

const PLAIN: AnswerSealing = {seal: (body) => body, open: (stored) => stored}

/** Claims of a key refused this many times in a row (each time for a record that then vanished) give up with 409. */
const CLAIM_ATTEMPTS = 3

/**
 * Runs a write route under its Idempotency-Key (when one is sent): replays a stored response
 * byte for byte with `Idempotent-Replayed: true`, or runs `write` and keeps its response. The
 * key is claimed and the response stored inside the write's own transaction, so they commit
 * with the change or not at all: a 5xx leaves the key free for a retry. A 4xx is kept too (on
 * its own: it wrote nothing). `sealing` keeps an answer that holds a secret encrypted at rest.
 */
export async function respondIdempotently<R>(
  ctx: AppContext,
  services: Services,
  endpoint: string,
  write: (hooks: WriteHooks<R>) => Promise<R>,
  respond: (result: R) => WriteResponse,
  sealing: AnswerSealing = PLAIN,
): Promise<void> {
  // Only an absent header means no key: an empty one is a malformed key (400 from ticket()).
  if (!('idempotency-key' in ctx.headers)) {
    send(ctx, respond(await write(NO_HOOKS)))
    return
  }
  const {idempotency} = services
  const ticket = idempotency.ticket(ctx.state.customerId as string, endpoint, ctx.get('idempotency-key'), ctx.request.body)
  // Built once per result: a deadlock retry of the write brings a new one.
  let answered: {result: R; response: WriteResponse} | null = null
  const answer = (result: R) => (answered?.result === result ? answered : (answered = {result, response: respond(result)})).response
  // A refusal of the input that the write committed as this key's response (see WriteHooks.atFailure).
  let storedRefusal: AppError | undefined
  const sealed = (response: WriteResponse): WriteResponse => ({statusCode: response.statusCode, body: sealing.seal(response.body)})
  for (let attempt = 1; ; attempt++) {
    const claim = idempotency.claim(ticket)
    try {
      const result = await write({
        key: {
          claim,
          respond: (outcome) => {
            if (!(outcome instanceof AppError)) return sealed(answer(outcome))
            storedRefusal = outcome
            return sealed({statusCode: outcome.status, body: JSON.stringify(appErrorEnvelope(outcome))})
          },
        },
      })
      send(ctx, answer(result))
      return
    } catch (error) {
      // Stored with the write's commit already: answer it as it was stored.
      if (error === storedRefusal) throw error
      const refusal = idempotency.refusal(error)
      if (refusal) {
        const decision = await idempotency.afterRefusal(ticket, refusal)
        if (decision.kind === 'replay') return replay(ctx, decision, sealing)
        if (attempt < CLAIM_ATTEMPTS) continue
        throw idempotency.stillInProgress()
      } else if (error instanceof AppError && error.status < 500 && error.status !== 429) {
        const decision = await idempotency.storeAlone(ticket, error.status, sealing.seal(JSON.stringify(appErrorEnvelope(error))))
        if (decision?.kind === 'replay') return replay(ctx, decision, sealing)
      }
      throw error
    }
  }
}

function replay(ctx: AppContext, decision: Extract<IdempotencyDecision, {kind: 'replay'}>, sealing: AnswerSealing): void {
  ctx.set('Idempotent-Replayed', 'true')
  send(ctx, {statusCode: decision.statusCode, body: sealing.open(decision.body)})
}

function send(ctx: AppContext, response: WriteResponse): void {
  ctx.status = response.statusCode
  ctx.type = 'application/json'
  ctx.body = response.body
}
