// Assert mode apart for C++ (issue 49): rlvr_apart.h's wire for the standard containers, by overloading on the
// declared type (the stub's and the call server's, both generated from the entry function's signature). Reading
// is strict: a tag, size or range that is not the declared type's fails the test (rlvr_bad).
#ifndef RLVR_WIRE_HPP
#define RLVR_WIRE_HPP
#include "rlvr_apart.h"

#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rlvr_wire {
template <class T>
typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value>::type put(rlvr_buf &b, T v) {
  if (std::is_signed<T>::value) rlvr_put_i(&b, (long long)v);
  else rlvr_put_u(&b, (unsigned long long)v);
}
inline void put(rlvr_buf &b, bool v) { rlvr_put_b(&b, v ? 1 : 0); }
template <class T>
typename std::enable_if<std::is_floating_point<T>::value>::type put(rlvr_buf &b, T v) { rlvr_put_d(&b, (double)v); }
inline void put(rlvr_buf &b, const std::string &v) { rlvr_put_s(&b, v.data(), v.size()); }
template <class T> void put(rlvr_buf &b, const std::vector<T> &v);
template <class T> void put(rlvr_buf &b, const std::set<T> &v);
template <class K, class V> void put(rlvr_buf &b, const std::map<K, V> &v);
template <class K, class V> void put(rlvr_buf &b, const std::unordered_map<K, V> &v);
template <class T> void put(rlvr_buf &b, const std::optional<T> &v);
template <class A, class B> void put(rlvr_buf &b, const std::pair<A, B> &v);
template <class... T> void put(rlvr_buf &b, const std::tuple<T...> &v);

template <class C> void put_seq(rlvr_buf &b, const C &v) {  // a vector or a set: a list
  rlvr_put_n(&b, 'l', v.size());
  for (const auto &x : v) put(b, x);  // vector<bool>'s const_reference is a plain bool
}
template <class C> void put_map(rlvr_buf &b, const C &v) {
  rlvr_put_n(&b, 'm', v.size());
  for (const auto &kv : v) put(b, kv.first), put(b, kv.second);
}
template <class T> void put(rlvr_buf &b, const std::vector<T> &v) { put_seq(b, v); }
template <class T> void put(rlvr_buf &b, const std::set<T> &v) { put_seq(b, v); }
template <class K, class V> void put(rlvr_buf &b, const std::map<K, V> &v) { put_map(b, v); }
template <class K, class V> void put(rlvr_buf &b, const std::unordered_map<K, V> &v) { put_map(b, v); }
template <class T> void put(rlvr_buf &b, const std::optional<T> &v) {
  if (!v) rlvr_add(&b, "n;", 2);
  else rlvr_add(&b, "o", 1), put(b, *v);
}
template <class A, class B> void put(rlvr_buf &b, const std::pair<A, B> &v) {
  rlvr_put_n(&b, 't', 2);
  put(b, v.first), put(b, v.second);
}
template <class... T> void put(rlvr_buf &b, const std::tuple<T...> &v) {
  rlvr_put_n(&b, 't', sizeof...(T));
  std::apply([&b](const auto &...x) { (put(b, x), ...); }, v);
}

template <class T>
typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value>::type get(rlvr_in &in, T &v) {
  if (std::is_signed<T>::value)
    v = (T)rlvr_get_i(&in, (long long)std::numeric_limits<T>::min(), (long long)std::numeric_limits<T>::max());
  else v = (T)rlvr_get_u(&in, (unsigned long long)std::numeric_limits<T>::max());
}
inline void get(rlvr_in &in, bool &v) { v = rlvr_get_b(&in) != 0; }
template <class T>
typename std::enable_if<std::is_floating_point<T>::value>::type get(rlvr_in &in, T &v) { v = (T)rlvr_get_d(&in); }
inline void get(rlvr_in &in, std::string &v) {
  size_t n = rlvr_get_n(&in, 's');
  v.assign(in.p, n);
  in.p += n;
}
template <class T> void get(rlvr_in &in, std::vector<T> &v);
template <class T> void get(rlvr_in &in, std::set<T> &v);
template <class K, class V> void get(rlvr_in &in, std::map<K, V> &v);
template <class K, class V> void get(rlvr_in &in, std::unordered_map<K, V> &v);
template <class T> void get(rlvr_in &in, std::optional<T> &v);
template <class A, class B> void get(rlvr_in &in, std::pair<A, B> &v);
template <class... T> void get(rlvr_in &in, std::tuple<T...> &v);

template <class C> void get_seq(rlvr_in &in, C &v) {  // a list into a vector (in order) or a set
  size_t n = rlvr_get_n(&in, 'l');
  v.clear();
  for (size_t i = 0; i < n; i++) {
    typename C::value_type x{};
    get(in, x);
    v.insert(v.end(), std::move(x));
  }
}
template <class T> void get(rlvr_in &in, std::vector<T> &v) { get_seq(in, v); }
template <class T> void get(rlvr_in &in, std::set<T> &v) { get_seq(in, v); }
template <class M> void get_map(rlvr_in &in, M &v) {
  size_t n = rlvr_get_n(&in, 'm');
  v.clear();
  for (size_t i = 0; i < n; i++) {
    typename M::key_type k{};
    typename M::mapped_type x{};
    get(in, k), get(in, x);
    v[std::move(k)] = std::move(x);
  }
}
template <class K, class V> void get(rlvr_in &in, std::map<K, V> &v) { get_map(in, v); }
template <class K, class V> void get(rlvr_in &in, std::unordered_map<K, V> &v) { get_map(in, v); }
template <class T> void get(rlvr_in &in, std::optional<T> &v) {
  if (rlvr_peek(&in, 'n')) {
    rlvr_tag(&in, 'n'), rlvr_tag(&in, ';');
    v.reset();
    return;
  }
  rlvr_tag(&in, 'o');
  T x{};
  get(in, x);
  v = std::move(x);
}
template <class A, class B> void get(rlvr_in &in, std::pair<A, B> &v) {
  if (rlvr_get_n(&in, 't') != 2) rlvr_bad(&in);
  get(in, v.first), get(in, v.second);
}
template <class... T> void get(rlvr_in &in, std::tuple<T...> &v) {
  if (rlvr_get_n(&in, 't') != sizeof...(T)) rlvr_bad(&in);
  std::apply([&in](auto &...x) { (get(in, x), ...); }, v);
}

// the tests' side: the reply of a call, as the declared type R (the candidate's exception is thrown again)
inline rlvr_in reply_body(const rlvr_buf &rep) {  // past the reply's tag 'r'
  rlvr_in in = {rep.p, rep.p + rep.n};
  if (rlvr_peek(&in, 'x')) {
    rlvr_tag(&in, 'x');
    std::string why;
    get(in, why);
    throw std::runtime_error(why);
  }
  rlvr_tag(&in, 'r');
  return in;
}
template <class R> R reply(const rlvr_buf &rep, const char *type) {
  rlvr_want = type;
  rlvr_in in = reply_body(rep);
  R r{};
  get(in, r);
  rlvr_done(&in);
  return r;
}
inline void reply_void(const rlvr_buf &rep) {
  rlvr_in in = reply_body(rep);
  rlvr_done(&in);
}
}  // namespace rlvr_wire
#endif
