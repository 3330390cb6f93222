import {Box, Text} from 'ink'

export interface SecretOnceProps {
  title: string
  secret: string
  details: ReadonlyArray<[label: string, value: string]>
}

/** A boxed secret with the warning that it is shown this one time. */
export function SecretOnce({title, secret, details}: SecretOnceProps) {
  return (
    <Box flexDirection="column">
      <Box borderStyle="round" borderColor="yellow" flexDirection="column" paddingX={1}>
        <Text bold>{title}</Text>
        <Text color="green">{secret}</Text>
        <Text color="yellow">Copy it now: it cannot be shown again. Only its hash is stored.</Text>
      </Box>
      {details.map(([label, value]) => (
        <Text key={label}>
          <Text dimColor>{label.padEnd(10)}</Text> {value}
        </Text>
      ))}
    </Box>
  )
}
