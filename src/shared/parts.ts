/** Asks for a part by name, building it on first use. */
export interface GetPart<P> {
  <K extends keyof P>(name: K): Promise<P[K]>
  /** The part if something already asked for it, else undefined (nothing is built). */
  ifBuilt<K extends keyof P>(name: K): Promise<P[K]> | undefined
}

/** How each part is built, from the other parts it asks for; a builder loads its modules when it runs. */
export type PartBuilders<P> = {[K in keyof P]: (get: GetPart<P>) => Promise<P[K]>}

/**
 * A lazily built object graph: each part is built the first time it is asked for, and once, so a
 * command that needs one store loads that store's modules and no others, while a caller that asks
 * for every part gets the same graph the builders describe.
 */
export function lazyParts<P>(builders: PartBuilders<P>): GetPart<P> {
  const built = new Map<keyof P, Promise<unknown>>()
  const get = (<K extends keyof P>(name: K): Promise<P[K]> => {
    let part = built.get(name)
    if (part === undefined) {
      part = builders[name](get)
      built.set(name, part)
    }
    return part as Promise<P[K]>
  }) as GetPart<P>
  get.ifBuilt = <K extends keyof P>(name: K) => built.get(name) as Promise<P[K]> | undefined
  return get
}

/** Every part the builders describe, built through `get` (parts it already built are reused): for the callers that use them all. */
export async function allParts<P extends object>(builders: PartBuilders<P>, get: GetPart<P> = lazyParts(builders)): Promise<P> {
  const names = Object.keys(builders) as Array<keyof P>
  const entries = await Promise.all(names.map(async (name) => [name, await get(name)] as const))
  return Object.fromEntries(entries) as P
}
