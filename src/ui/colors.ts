import type {DeliveryState} from '../deliveries/delivery-state.js'
import type {DeliveryStatus} from '../deliveries/delivery-types.js'
import type {BreakerState} from '../webhooks/webhook-types.js'

/** How every view colours a delivery's status. */
export const DELIVERY_STATUS_COLORS: Record<DeliveryStatus, string> = {
  pending: 'yellow',
  delivering: 'cyan',
  succeeded: 'green',
  failed: 'red',
  cancelled: 'gray',
}

/** How every view colours where a delivery stands. */
export const DELIVERY_STATE_COLORS: Record<DeliveryState, string> = {
  waiting: 'yellow',
  held: 'magenta',
  backing_off: 'yellow',
  delivering: 'cyan',
  succeeded: 'green',
  failed: 'red',
  cancelled: 'gray',
}

/** How every view colours a webhook's circuit breaker. */
export const BREAKER_COLORS: Record<BreakerState, string> = {closed: 'green', open: 'red', half_open: 'yellow'}

/**
 * Whether views may colour their output: not when NO_COLOR is set to anything (no-color.org) or
 * --no-color is given. Ink's colour library reads neither NO_COLOR nor anything but FORCE_COLOR
 * and its own flags, so colourless output is asked of it with FORCE_COLOR=0 before Ink loads.
 */
export function turnColorOffWhenAsked(env: NodeJS.ProcessEnv, argv: readonly string[]): void {
  if ((env['NO_COLOR'] ?? '') !== '' || argv.includes('--no-color')) env['FORCE_COLOR'] = '0'
}
