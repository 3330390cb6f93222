import https from 'node:https'

/** One JSON POST on a keep-alive agent, as a bare client sends it: resolves once the answer is read. */
export function barePost(url: string, agent: https.Agent, body: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const request = https.request(
      url,
      {method: 'POST', agent, headers: {'content-type': 'application/json', 'content-length': Buffer.byteLength(body)}},
      (response) => {
        response.resume()
        response.on('end', resolve)
      },
    )
    request.on('error', reject)
    request.end(body)
  })
}
