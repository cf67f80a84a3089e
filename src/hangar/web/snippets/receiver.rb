# A webhook receiver: checks both signatures and the time, drops repeats, answers at once,
# works after.
# Run:  WEBHOOK_SECRET=<your secret> PORT=8080 ruby receiver.rb
# Serve it behind TLS: webhooks are only ever sent to https:// URLs. Ruby's standard library
# has had no HTTP server since 3.0, so this one reads the request itself. In Rails or Sinatra,
# keep authentic? and the repeat check, with the body from request.raw_post (or body.read).
require "json"
require "openssl"
require "socket"

SECRET = ENV.fetch("WEBHOOK_SECRET")
TOLERANCE_S = 5 * 60 # a delivery signed longer ago (or ahead) than this is refused
WORK = Queue.new
SEEN = {} # in production: a unique key on the delivery id where you keep work

def signed_with_secret?(raw_body, signature)
  # Hash the bytes exactly as received, before any JSON parsing.
  expected = "sha256=" + OpenSSL::HMAC.hexdigest("SHA256", SECRET, raw_body)
  # secure_compare takes the same time wherever the two values differ.
  !signature.nil? && OpenSSL.secure_compare(expected, signature)
end

def signed_recently?(raw_body, headers)
  # Standard Webhooks' signature covers webhook-id and webhook-timestamp as well as the
  # body: a copy sent again later is stale, and one given another id does not verify.
  id = headers.fetch("webhook-id", "")
  timestamp = headers.fetch("webhook-timestamp", "")
  return false if id.empty? || !timestamp.match?(/\A[0-9]{1,15}\z/)
  return false if (Time.now.to_i - Integer(timestamp, 10)).abs > TOLERANCE_S

  mac = OpenSSL::HMAC.new(SECRET, "SHA256")
  mac << "#{id}.#{timestamp}." << raw_body
  expected = "v1," + [mac.digest].pack("m0") # base64, on one line
  # Several space-separated signatures while a secret is rotated: one of yours is enough.
  headers.fetch("webhook-signature", "").split(" ").any? do |given|
    OpenSSL.secure_compare(expected, given)
  end
end

def authentic?(raw_body, headers)
  # While a secret is rotated, X-Service-Signature is made with the new secret and
  # X-Service-Signature-Previous with the old one: either one matching yours is enough, so
  # you can switch WEBHOOK_SECRET to the new secret at any time during the grace period.
  signed = signed_with_secret?(raw_body, headers["x-service-signature"]) ||
           signed_with_secret?(raw_body, headers["x-service-signature-previous"])
  signed && signed_recently?(raw_body, headers)
end

def handle(delivery_id, envelope)
  # Your work goes here, after the answer has gone.
  puts "#{delivery_id} #{envelope["event"]} #{JSON.generate(envelope["data"])}"
end

def read_request(client)
  method = client.gets("\r\n").to_s.split(" ").first
  headers = {}
  while (line = client.gets("\r\n")) && line != "\r\n"
    name, value = line.split(":", 2)
    headers[name.strip.downcase] = value.to_s.strip
  end
  [method, headers, client.read(Integer(headers.fetch("content-length", "0"), 10)).to_s]
end

STATUS = { 204 => "204 No Content", 401 => "401 Unauthorized\r\nContent-Length: 0" }.freeze

$stdout.sync = true
Thread.new do
  loop do
    delivery_id, raw = WORK.pop
    begin
      handle(delivery_id, JSON.parse(raw))
    rescue StandardError => e # one bad delivery must not stop the ones after it
      warn e.full_message
    end
  end
end

server = TCPServer.new("127.0.0.1", Integer(ENV.fetch("PORT", "8080"), 10))
loop do
  client = server.accept
  begin
    method, headers, raw = read_request(client)
    if method != "POST" || !authentic?(raw, headers)
      status = 401
    else
      # The same delivery can come again (a retry after a timeout, a Redeliver, a copy
      # replayed within the tolerance): answer it with a 2xx, so that hangar stops sending
      # it, but handle it only once. By webhook-id: the signature covers it.
      delivery_id = headers.fetch("webhook-id")
      WORK << [delivery_id, raw] unless SEEN.key?(delivery_id)
      SEEN[delivery_id] = true
      # At once: an answer later than 10 s is a failed attempt, and hangar sends it again.
      status = 204
    end
    client.write("HTTP/1.1 #{STATUS.fetch(status)}\r\nConnection: close\r\n\r\n")
  rescue StandardError => e # a malformed request: drop the connection, keep serving
    warn e.message
  ensure
    client.close
  end
end
