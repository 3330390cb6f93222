import type {DeliveryStatus} from '../deliveries/delivery-types.js'

/** How every view colours a delivery's status. */
export const DELIVERY_STATUS_COLORS: Record<DeliveryStatus, string> = {
  pending: 'yellow',
  delivering: 'cyan',
  succeeded: 'green',
  failed: 'red',
  cancelled: 'gray',
}
