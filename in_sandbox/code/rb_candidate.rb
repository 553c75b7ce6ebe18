# The candidate's process of Ruby assert mode (issue 49; rb_tests.rb starts it): opens the two FIFOs, loads the
# candidate's code (solution.rb) in this ruby, says which of the names the tests read it defines as methods, then
# answers calls until the pipe closes: a name and plain arguments in, one plain value or the error's class and
# message out (rb_wire.rb). Nothing here is trusted: the tests' process believes only what it decodes.
require_relative "rlvr_wire"

rlvr_req = File.open("rlvr_req", "r")
rlvr_rep = File.open("rlvr_rep", "w")
rlvr_rep.sync = true
rlvr_send = ->(msg) { rlvr_rep.write(RlvrWire.line(msg)) }
rlvr_next = lambda do
  line = rlvr_req.gets
  exit!(0) if line.nil?
  JSON.parse(line)
end
rlvr_describe = ->(e) { [e.class.name.to_s, e.message.to_s] }

hello = rlvr_next.call
begin
  load File.expand_path("solution.rb")
rescue Exception => e # rubocop:disable Lint/RescueException: the candidate's SystemExit or SyntaxError too
  warn(e.full_message(highlight: false))
  rlvr_send.call({ "raise" => rlvr_describe.call(e) })
  exit!(1)
end
found = {}
Array(hello["names"]).each do |n|
  next unless n.is_a?(String) && n.match?(/\A[a-z_]\w*[?!]?\z/)

  found[n] = "call" if Object.private_method_defined?(n) || Object.method_defined?(n)
end
rlvr_send.call({ "names" => found })
loop do
  msg = rlvr_next.call
  begin
    value = RlvrWire.encode(TOPLEVEL_BINDING.receiver.send(msg["call"], *RlvrWire.decode(msg["args"])))
  rescue Exception => e # rubocop:disable Lint/RescueException
    rlvr_send.call({ "raise" => rlvr_describe.call(e) })
    next
  end
  rlvr_send.call({ "value" => value })
end
