import {createClient} from 'redis'
const c = createClient({url: 'redis://127.0.0.1:6379/3', socket: {reconnectStrategy: false}, disableOfflineQueue: true})
c.on('error', (e) => console.log('error event', e.message))
const p = c.connect().then(() => console.log('connect resolved'), (e) => console.log('connect rejected', e.message))
try { await c.xAutoClaim('x', 'g', 'c', 1, '0-0') } catch (e) { console.log('cmd', e.message) }
console.log('isOpen', c.isOpen); c.destroy()
const t = setTimeout(() => console.log('connect never settled'), 2000)
await p; clearTimeout(t)
