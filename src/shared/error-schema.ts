/** The error envelope every failure of the API carries. */
export const ERROR_ENVELOPE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'code', 'message'],
      properties: {
        type: {
          type: 'string',
          enum: ['authentication_error', 'authorization_error', 'invalid_request_error', 'not_found_error', 'rate_limit_error', 'api_error'],
        },
        code: {type: 'integer', description: 'Equals the HTTP status.'},
        message: {type: 'string'},
        param: {type: 'string', description: 'The offending field, query parameter or header, on validation errors.'},
      },
    },
  },
} as const
