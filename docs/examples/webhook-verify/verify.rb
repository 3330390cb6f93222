# Checks the signature of a leads webhook request (Ruby 3.0+, standard library only).
require "openssl"

module WebhookVerify
  # How far X-Service-Timestamp may be from this server's clock, in seconds.
  TOLERANCE_SECONDS = 300

  # True when a leads webhook request was signed with `secret` (the whole `svc_whsec_...` string)
  # less than TOLERANCE_SECONDS ago. `raw_body` is the request body exactly as received
  # (Rack: `request.body.read`), never JSON parsed and generated again; `headers` a Hash of header
  # names to values, any case; `now` Unix seconds.
  #
  # X-Service-Signature is made with the webhook's current secret. For 24 hours after a rotation,
  # X-Service-Signature-Previous is made with the secret the rotation replaced, so a receiver
  # still configured with that one keeps accepting deliveries until it is given the new one.
  def self.verify(raw_body, headers, secret, now: Time.now.to_f)
    named = headers.to_h { |name, value| [name.to_s.downcase, value.to_s] }
    timestamp = named.fetch("x-service-timestamp", "")
    return false unless timestamp.match?(/\A[0-9]+\z/)
    return false if (now - timestamp.to_i).abs > TOLERANCE_SECONDS

    digest = OpenSSL::HMAC.hexdigest("SHA256", secret, "#{timestamp}.".b + raw_body.b)
    expected = "sha256=#{digest}"
    %w[x-service-signature x-service-signature-previous].any? do |name|
      given = named.fetch(name, "")
      given.bytesize == expected.bytesize && OpenSSL.fixed_length_secure_compare(given, expected)
    end
  end
end
