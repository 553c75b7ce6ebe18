# The plain data Ruby's two assert-mode processes exchange (issue 49; rb_tests.rb and rb_candidate.rb load it):
# one JSON line a message; nil, booleans, integers, finite floats and UTF-8 strings as themselves, the rest tagged:
# {"n": "nan" | "inf" | "-inf"}, {"b": base64, "e": encoding} (a string not in valid UTF-8), {"y": name} (a
# symbol), {"a": [...]} (an array), {"h": [[key, value], ...]} (a hash, in order), {"s": [...]} (a set).
# Anything else (an object, a proc, a class equal to everything) is refused: it never crosses.
require "json"
require "base64"
require "set"

module RlvrWire
  MAX_DEPTH = 200
  NONFINITE = { "nan" => Float::NAN, "inf" => Float::INFINITY, "-inf" => -Float::INFINITY }.freeze

  module_function

  def encode(v, depth = 0)
    raise TypeError, "containers nested too deep" if depth > MAX_DEPTH

    case v
    when nil, true, false, Integer then v
    when Float then v.finite? ? v : { "n" => v.nan? ? "nan" : (v.positive? ? "inf" : "-inf") }
    when String
      utf8 = [Encoding::UTF_8, Encoding::US_ASCII].include?(v.encoding) && v.valid_encoding?
      utf8 ? v.encode(Encoding::UTF_8) : { "b" => Base64.strict_encode64(v), "e" => v.encoding.name }
    when Symbol then { "y" => v.to_s }
    when Array then { "a" => v.map { |x| encode(x, depth + 1) } }
    when Hash then { "h" => v.map { |k, x| [encode(k, depth + 1), encode(x, depth + 1)] } }
    when Set then { "s" => v.map { |x| encode(x, depth + 1) } }
    else raise TypeError, "a #{v.class} is not plain data"
    end
  end

  def decode(v, depth = 0)
    raise TypeError, "containers nested too deep" if depth > MAX_DEPTH

    case v
    when nil, true, false, Integer, Float, String then v
    when Hash
      raise TypeError, "not an encoded value" unless v.size.between?(1, 2)

      tag, x = v.first
      case tag
      when "n" then NONFINITE.fetch(x)
      when "b" then Base64.strict_decode64(String(x)).force_encoding(Encoding.find(String(v.fetch("e"))))
      when "y" then String(x).to_sym
      when "a" then Array(x).map { |e| decode(e, depth + 1) }
      when "h" then Array(x).to_h { |(k, e)| [decode(k, depth + 1), decode(e, depth + 1)] }
      when "s" then Set.new(Array(x).map { |e| decode(e, depth + 1) })
      else raise TypeError, "not an encoded value"
      end
    else raise TypeError, "not an encoded value"
    end
  end

  def line(msg)
    "#{JSON.generate(msg)}\n"
  end
end
