# The tests' process of Ruby assert mode (issue 49): runs in the toolchain sandbox, never in the service.
#
# Started as a copy of ruby that its own user cannot read (chmod 100): the kernel makes the process non-dumpable,
# so the candidate's process (same uid) cannot open its /proc files or ptrace it. It reads the sentinel
# (rlvr_nonce) and the tests (rlvr_tests.rb), deletes both, loads the libraries the tests require (test/unit...)
# while no candidate exists (so nothing it plants in HOME is loaded), then starts the candidate's process
# (rb_candidate.rb: the candidate's code in a ruby of its own, its stdout going to stderr) and talks to it over
# two FIFOs with plain data (rb_wire.rb). Every method the tests call that the candidate defines (and this ruby
# does not) is a private method of Object here that crosses over; the tests run at top level in this pristine
# process (test/unit's cases run here, counted); the sentinel and what ran go on this process's stdout, which
# the candidate cannot reach. A failed test exits 1 saying "Test failed"; the tests' own error before any call
# into the candidate prints ``{sentinel}:bad_reference:...``; the candidate's process ending early exits 0
# without the sentinel (never a pass).
require_relative "rlvr_wire"

sentinel = File.read("rlvr_nonce").strip
tests = File.read("rlvr_tests.rb")
File.delete("rlvr_nonce", "rlvr_tests.rb")
RLVR_RAN = { "tests" => 1, "asserts" => 0, "calls" => 0 }
tests.scan(/^\s*require\s*\(?\s*['"](\w[\w\/.-]*)['"]/) do |(lib)|
  require lib
rescue LoadError, StandardError
  nil # the tests' own require says so when they run
end
if defined?(Test::Unit::AutoRunner)
  Test::Unit::AutoRunner.need_auto_run = false # run below, counted
  Test::Unit::TestCase.prepend(Module.new do
    def add_assertion(*)
      RLVR_RAN["asserts"] += 1
      super
    end
  end)
end

def rlvr_ended
  $stderr.write("\nthe candidate's program ended before the tests finished\n")
  $stderr.flush
  exit!(0) # exit 0 without the sentinel: never a pass (code.early_exit)
end

system("mkfifo", "rlvr_req", "rlvr_rep") or abort("mkfifo failed")
Process.detach(Process.spawn("ruby", "rlvr_candidate.rb", in: :close, out: 2, err: 2))
RLVR_REQ = File.open("rlvr_req", "w")
RLVR_REP = File.open("rlvr_rep", "r")

def rlvr_ask(msg)
  begin
    RLVR_REQ.write(RlvrWire.line(msg))
    RLVR_REQ.flush
  rescue SystemCallError, IOError
    rlvr_ended
  end
  line = RLVR_REP.gets
  rlvr_ended if line.nil?
  JSON.parse(line)
end

RLVR_ERRORS = [ArgumentError, TypeError, ZeroDivisionError, IndexError, KeyError, RangeError, StopIteration,
               NoMethodError, NameError, FloatDomainError, FrozenError, NotImplementedError, RuntimeError,
               StandardError].to_h { |c| [c.name, c] }.freeze

def rlvr_call(name, args)
  RLVR_RAN["calls"] += 1
  reply = rlvr_ask({ "call" => name, "args" => RlvrWire.encode(args) })
  if reply.is_a?(Hash) && reply.key?("value")
    RLVR_RAN["nonfinite"] = 1 if JSON.generate(reply["value"]).include?('{"n":')
    return RlvrWire.decode(reply["value"])
  end
  cls, message = reply.is_a?(Hash) && reply["raise"].is_a?(Array) ? reply["raise"] : ["RuntimeError", "an unreadable answer"]
  raise RLVR_ERRORS.fetch(cls, RuntimeError), String(message)
end

KEYWORDS = %w[BEGIN END alias and begin break case class def defined do else elsif end ensure false for if in module
              next nil not or redo rescue retry return self super then true undef unless until when while yield
              require require_relative puts print p].freeze
wanted = tests.scan(/(?<![\w@$.]|::)[a-z_][A-Za-z0-9_]*[?!]?/).uniq - KEYWORDS
wanted.reject! { |n| Object.private_method_defined?(n) || Object.method_defined?(n) }
hello = rlvr_ask({ "names" => wanted })
unless hello.is_a?(Hash) && hello["names"].is_a?(Hash)
  $stderr.puts(hello.is_a?(Hash) && hello["raise"] ? Array(hello["raise"]).join(": ") : "the candidate's code failed")
  exit!(1)
end
hello["names"].each_key do |n|
  next unless wanted.include?(n)

  Object.send(:define_method, n) do |*args, &blk|
    raise ArgumentError, "a block cannot cross into the candidate's process" if blk

    rlvr_call(n, args)
  end
  Object.send(:private, n)
end

def rlvr_say(sentinel, what)
  $stdout.write("\n#{sentinel}:#{what}\n")
  $stdout.flush
  exit!(0) # exit 0: the driver keeps the stdout of a run that ended well
end

def rlvr_failed(message)
  $stderr.write("#{message}\nTest failed: #{message.lines.first}")
  $stderr.flush
  exit!(1)
end

begin
  TOPLEVEL_BINDING.eval(tests, "tests.rb", 1)
rescue ScriptError, StandardError, SystemExit => e
  failed = defined?(Test::Unit::AssertionFailedError) && e.is_a?(Test::Unit::AssertionFailedError)
  missing = e.is_a?(NameError) && wanted.include?(e.name.to_s)
  if e.is_a?(SystemExit)
    rlvr_failed("the tests exited with status #{e.status}") unless e.success?
    rlvr_ended if RLVR_RAN["calls"].zero?
  elsif !failed && !missing && RLVR_RAN["calls"].zero?
    rlvr_say(sentinel, "bad_reference:#{JSON.generate(e.full_message(highlight: false))}")
  else
    rlvr_failed(e.full_message(highlight: false))
  end
end
if defined?(Test::Unit::AutoRunner)
  before = RLVR_RAN["calls"]
  RLVR_RAN["tests"] = 0
  Test::Unit::TestCase.prepend(Module.new do
    def run_test(*)
      RLVR_RAN["tests"] += 1
      super
    end
  end)
  rlvr_failed("test/unit reported a failure or an error") unless Test::Unit::AutoRunner.run
  RLVR_RAN["tests"] = 1 if RLVR_RAN["tests"].zero? && RLVR_RAN["calls"] > before
end
$stdout.write("\n#{sentinel}\n")
rlvr_say(sentinel, "ran:#{JSON.generate(RLVR_RAN)}")
